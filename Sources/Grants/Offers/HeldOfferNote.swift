/// What `offers list` says about a held outgoing offer, from its contact's status: deliverable at the contact's next
/// check while the pairing is active, otherwise why it cannot be and what to do (the contact's "pair again").
enum HeldOfferNote {
    static func text(contactStatus: String?) -> String {
        switch contactStatus {
        case "active": return "will be delivered when they next check"
        case "revoked": return "not deliverable: the other device removed this one — pair again"
        case "lapsed": return "not deliverable: the pairing lapsed — pair again with a new grant"
        default: return "not deliverable: the contact is gone"
        }
    }

    /// What `offers list` says of an offer `sweep-grants` finished because its pairing ended before it was collected.
    static let finished = "the pairing ended before it was collected; its share was stopped — send it again after pairing again"
}
