import Runner

/// `pull-offers [--check-now]`: collects offers contacts hold for this node (seed §11.2–§11.3).
///
/// Off unless `pull-offers.enabled` is on or `--check-now` is given. Dials each contact with a usable held grant at
/// most once per 5 minutes (a last-pull time in the future counts as recent and is reset to now), proves the grant,
/// reports this node's decisions on that contact's earlier offers, stores each collected offer at most once,
/// acknowledges it, and notifies. `revoked`/`lapsed` answers drop the dead grant; unreachable contacts are skipped quietly.
///
/// An offer is taken in only from an endpoint that could deliver it live at that moment: one not blocked that holds
/// an active grant issued by this node. A blocked contact, or one without such a grant, is never dialled (nothing
/// could be taken from it, and dialling tells it when and where this node runs). Pulled offers meet the same limits
/// and decline cooldowns as live ones; each offer over them is refused in the acknowledgement, and its sender keeps
/// holding it.
struct PullOffersJob: Job {
    let name = "pull-offers"
    let summary = "collect offers held for this node by its contacts (opt-in; at most once per contact per 5 minutes)"
    let schedule = Schedule.every(minutes: 15)
    let options: [OptionSpec] = [.flag("--check-now", "pull even when pull-offers.enabled is off")]
    let environmentKeys = [(name: "JOB_NOTIFY_COMMAND", help: "shell command run when offers arrive (JOB_NOTIFY_KIND, JOB_NOTIFY_COUNT set)")]
    var leaseSeconds: Int { 300 }

    /// The minimum time between two pulls from one contact.
    static let interval: Int64 = 5 * 60_000

    func run(_ context: JobContext) throws -> JobResult {
        let enabled = try context.settings.isOn(GrantsSettings.pullEnabled)
        guard context.arguments.flag("--check-now") || enabled else {
            return .skipped("disabled")
        }
        let node = try Node(context)
        let incoming = IncomingOffers(database: node.database, vault: node.vault)
        let dialer = LinkDialer(node: node, context: context)
        var counts: Counts = ["contacts": 0, "collected": 0, "duplicates": 0, "refused": 0, "recent": 0, "blocked": 0, "no_grant": 0,
                              "unreachable": 0, "revoked": 0, "lapsed": 0, "failed": 0]
        for contact in try node.contacts.all() {
            try context.checkCancellation()
            let now = context.nowMilliseconds
            guard let grant = try node.held.usable(contactID: contact.id), contact.address != nil else { continue }
            if try node.blocks.contains(contact.endpoint) {
                counts.add("blocked")
                continue
            }
            guard try node.issued.hasActive(peer: contact.endpoint, now: now) else {
                counts.add("no_grant")
                continue
            }
            if let last = contact.lastPullAt, last > now - PullOffersJob.interval {
                if last > now, !context.dryRun {
                    try node.database.write { db in _ = try db.execute("UPDATE contacts SET last_pull_at = ? WHERE id = ?", [now, contact.id]) }
                }
                counts.add("recent")
                continue
            }
            counts.add("contacts")
            if context.dryRun { continue }
            try node.database.write { db in _ = try db.execute("UPDATE contacts SET last_pull_at = ? WHERE id = ?", [now, contact.id]) }
            do {
                let (collected, duplicates) = try pull(contact, grant: grant, node: node, incoming: incoming, dialer: dialer, context: context, counts: &counts)
                counts.add("collected", collected)
                counts.add("duplicates", duplicates)
            } catch let failure as LinkFailure {
                switch failure {
                case .unreachable, .timeout, .wrongPeer, .handshake: counts.add("unreachable")
                default:
                    counts.add("failed")
                    context.logger.warn("pull-broken", ["category": .of(failure)])
                }
            }
        }
        Notifier.incomingOffers(count: counts["collected"], context: context)
        return .completed(counts)
    }

    /// One pull from one contact; returns offers newly stored and offers already known.
    private func pull(_ contact: Contact, grant: HeldGrant, node: Node, incoming: IncomingOffers, dialer: LinkDialer,
                      context: JobContext, counts: inout Counts) throws -> (Int, Int) {
        let connection = try dialer.dial(contact, .pull)
        defer { connection.close() }
        let answer = try ProofExchange.prove(connection, grant: grant, identity: node.identity)
        guard answer == .accepted else {
            try dialer.forget(grant, answer: answer, contact: contact)
            counts.add(answer == .revoked ? "revoked" : "lapsed")
            return (0, 0)
        }
        if let address = contact.address { try node.contacts.recordAddress(address, contactID: contact.id, now: context.nowMilliseconds) }
        let decisions = try incoming.unreportedDecisions(from: contact.endpoint)
        try connection.send(["type": "pull", "decisions": LinkWire.decisions(decisions)])
        var collected = 0
        var duplicates = 0
        var refused = 0
        var seen = 0
        var first = true
        let limits = try GrantsSettings.offerLimits(context.settings)
        defer {
            counts.add("refused", refused)
            if refused > 0 { context.logger.info("offers-refused", ["delivery": "pull", "count": .int(refused)]) }
        }
        while true {
            let message = try connection.receive()
            try message.expect("offers")
            if first {
                try incoming.markReported(decisions, from: contact.endpoint, now: context.nowMilliseconds)
                first = false
            }
            let offers = try message.objects("offers", maxCount: LinkWire.offersPerFrame).map(OfferPayload.init)
            if offers.isEmpty { break }
            seen += offers.count
            guard seen <= LinkWire.maxOffersPerPull else { throw LinkFailure.oversize }
            // Each offer is judged as a live one would be: the sender's standing, then the limits. Refused ones are
            // named in the acknowledgement, so the sender keeps holding them.
            var taken: [String] = []
            var refusedIDs: [String] = []
            try node.database.write { _ in
                for offer in offers {
                    switch try incoming.receive(offer, from: contact.endpoint, limits: limits, now: context.nowMilliseconds) {
                    case .stored:
                        collected += 1
                        taken.append(offer.offerID)
                        if let name = offer.senderName { try node.contacts.recordClaimedName(name, contactID: contact.id) }
                    case .duplicate:
                        duplicates += 1
                        taken.append(offer.offerID)
                    case .refused:
                        refused += 1
                        refusedIDs.append(offer.offerID)
                    }
                }
            }
            try connection.send(LinkWire.ack(taken: taken, refused: refusedIDs))
        }
        return (collected, duplicates)
    }
}
