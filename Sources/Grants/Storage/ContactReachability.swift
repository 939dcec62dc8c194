/// How a contact can be reached, as the contact list shows it (docs/protocols/grants-and-link.md §5, §5.1, §11.5). Never probed: it follows from
/// the last real connection or dial.
package enum ContactReachability: String, Sendable {
    /// The last connection to it succeeded and nothing waits for it: an offer goes live.
    case reachableNow = "reachable-now"
    /// The last dial failed, or offers wait for it: they are delivered when it next checks.
    case deliverLater = "deliver-later"
    /// Never dialled yet: an offer goes live if it answers, else waits for its next check.
    case untried
    /// Its grant was revoked or lapsed on its side (or none is held): it can no longer be reached; pair again.
    case pairAgain = "pair-again"
    /// The last dial found another key at its address and no connection has succeeded since: the device there (a
    /// reinstall, or another device) does not know this node; pair again (docs/protocols/grants-and-link.md §5.1).
    case notRecognized = "not-recognized"

    /// The state of `contact`, given whether a usable grant from it is held and how many offers wait for it.
    package static func of(_ contact: Contact, holdsUsableGrant: Bool, heldOffers: Int) -> ContactReachability {
        if contact.status != "active" || !holdsUsableGrant { return .pairAgain }
        if let replaced = contact.replacedAt, replaced > (contact.lastTransferAt ?? .min) { return .notRecognized }
        if heldOffers > 0 { return .deliverLater }
        switch (contact.lastTransferAt, contact.lastUnreachableAt) {
        case (nil, nil): return .untried
        case (_, nil): return .reachableNow
        case (nil, _): return .deliverLater
        case (let ok?, let failed?): return ok >= failed ? .reachableNow : .deliverLater
        }
    }

    /// What the contact list says.
    package var text: String {
        switch self {
        case .reachableNow: return "reachable now"
        case .deliverLater: return "offers will be delivered when they next check"
        case .untried: return "not contacted yet"
        case .pairAgain: return "no longer reachable — pair again"
        case .notRecognized: return "this device is no longer recognized — pair again"
        }
    }
}
