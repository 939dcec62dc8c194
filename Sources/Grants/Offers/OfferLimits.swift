/// The receiver's abuse limits for incoming offers (docs/protocols/grants-and-link.md §7), decided purely from counts the store provides.
package struct OfferLimits: Sendable {
    package var maxPending: Int
    package var perHour: Int
    package var cooldownAfter: Int
    package var cooldownMilliseconds: Int64

    package init(maxPending: Int, perHour: Int, cooldownAfter: Int, cooldownMilliseconds: Int64) {
        self.maxPending = maxPending
        self.perHour = perHour
        self.cooldownAfter = cooldownAfter
        self.cooldownMilliseconds = cooldownMilliseconds
    }

    /// Why an offer is refused, as a fixed word for logs. `notGranted`: the sender is blocked or holds no active grant
    /// from this node (decided by `IncomingOffers`, never by the limits).
    package enum Refusal: String, Sendable { case pendingLimit = "pending-limit", rateLimit = "rate-limit", cooldown, notGranted = "not-granted" }

    /// The refusal for a new offer, or nil to accept it as pending.
    /// - Parameters:
    ///   - pending: offers from anyone still waiting for a decision.
    ///   - lastHour: offers from this endpoint received in the past hour.
    ///   - recentDecisions: this endpoint's latest decided offers, newest first (`declined` flag, decided at).
    package func refusal(pending: Int, lastHour: Int, recentDecisions: [(declined: Bool, at: Int64)], now: Int64) -> Refusal? {
        if pending >= maxPending { return .pendingLimit }
        if lastHour >= perHour { return .rateLimit }
        let latest = recentDecisions.prefix(cooldownAfter)
        if latest.count == cooldownAfter, latest.allSatisfy(\.declined), let newest = latest.first, now - newest.at < cooldownMilliseconds {
            return .cooldown
        }
        return nil
    }
}
