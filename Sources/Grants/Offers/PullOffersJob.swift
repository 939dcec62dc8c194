import Elapsed
import Foundation
import QUIC
import Runner

/// `pull-offers [--check-now]`: collects offers contacts hold for this node (docs/protocols/grants-and-link.md §11.2–§11.3).
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
///
/// Contacts are dialled concurrently, at most `pull-offers.parallel-dials` at once (each dialling thread over its own
/// store connection), longest-unpulled first. Each contact gets `pull-offers.contact-timeout-seconds` and the pass
/// `pull-offers.pass-budget-seconds`: a contact cut by either, or too slow for a link deadline, or not reached
/// before the budget ran out, counts as `skipped_for_time` (it is pulled again next pass; its label is listed in the
/// `--json` result's details only, never in logs).
struct PullOffersJob: Job {
    let name = "pull-offers"
    let libraries: [LazyLibrary] = [.quic]
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
        let settings = context.settings
        let passDeadline = context.monotonic.deadline(in: TimeInterval(try settings.int(GrantsSettings.pullPassBudget)))
        let contactSeconds = TimeInterval(try settings.int(GrantsSettings.pullContactTimeout))
        let width = try settings.int(GrantsSettings.pullParallelDials)
        var counts: Counts = ["contacts": 0, "collected": 0, "duplicates": 0, "refused": 0, "recent": 0, "blocked": 0, "no_grant": 0,
                              "unreachable": 0, "revoked": 0, "lapsed": 0, "failed": 0, "skipped_for_time": 0, "damaged": 0]
        var due: [(Contact, HeldGrant)] = []
        // A damaged sealed row (contact or held grant) is that contact's failure, counted `damaged`; the others are pulled.
        let (contacts, damagedContacts) = try node.contacts.allOpenable()
        counts["damaged"] = damagedContacts
        for contact in contacts {
            try context.checkCancellation()
            let now = context.nowMilliseconds
            let held: HeldGrant?
            do { held = try node.held.usable(contactID: contact.id) } catch where Vault.isDamagedRow(error) {
                counts.add("damaged")
                continue
            }
            guard let grant = held, contact.address != nil else { continue }
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
            due.append((contact, grant))
        }
        if counts["damaged"] > 0 { context.logger.warn("pull.rows_damaged", ["count": .int(counts["damaged"])]) }
        // Longest-unpulled first: a contact skipped for time (its last pull unchanged) comes early in the next pass.
        due.sort { ($0.0.lastPullAt ?? .min) < ($1.0.lastPullAt ?? .min) }
        let board = PullBoard(due)
        if !due.isEmpty {
            // Loaded here, once: each dialling thread's own store connection shares it.
            _ = try context.keyring()
            let reopening = context.reopening()
            // Progress (contacts done of due) is reported from this coordinating thread while the dialling threads work.
            ThreadGroup.run(min(width, due.count), waiting: { context.progress(done: board.done, total: due.count) }) { _ in
                PullOffersJob.dialContacts(board, context: reopening, contactSeconds: contactSeconds, passDeadline: passDeadline)
            }
            context.progress(done: board.done, total: due.count)
        }
        for (key, value) in board.counts.entries { counts[key] += value }
        // A pass stopped or failed part-way still reports what its finished contacts committed (offers collected …).
        context.committed = counts
        if let failure = board.failure { throw failure }
        try context.checkCancellation()
        NotifyCommand.run(kind: "incoming-offer", count: counts["collected"], context: context)
        let skipped = board.skippedLabels
        // Labels are the user's own words about a contact: shown in the --json result only (stdout may be a journal).
        return .completed(counts, details: context.jsonOutput && !skipped.isEmpty ? [("skipped_for_time", .array(skipped.map { .string($0) }))] : [])
    }

    /// One dialling thread: takes contacts from `board` until none are left, over a store connection of its own.
    private static func dialContacts(_ board: PullBoard, context base: JobContext.Reopening, contactSeconds: TimeInterval, passDeadline: MonotonicInstant) {
        let context: JobContext
        let node: Node
        do {
            context = try base.open()
            node = try Node(context)
        } catch {
            board.halt(error)
            return
        }
        let incoming = IncomingOffers(database: node.database, vault: node.vault)
        let dialer = LinkDialer(node: node, context: context)
        while let (index, contact, grant) = board.next() {
            var counts = Counts()
            defer { board.add(counts) }
            let clock = context.monotonic
            guard !clock.hasPassed(passDeadline) else {
                counts.add("skipped_for_time")
                board.skippedForTime(index: index, label: contact.label)
                continue
            }
            // The link's deadlines are instants of QUIC's clock: the time left on the pass's clock is carried over.
            let until = QUICConnection.clock.deadline(in: min(contactSeconds, passDeadline - clock.now()))
            do {
                let now = context.nowMilliseconds
                try node.database.write { db in _ = try db.execute("UPDATE contacts SET last_pull_at = ? WHERE id = ?", [now, contact.id]) }
                try pull(contact, grant: grant, node: node, incoming: incoming, dialer: dialer, context: context, until: until, counts: &counts)
            } catch let failure as LinkFailure {
                switch failure {
                case .unreachable, .wrongPeer, .handshake:
                    counts.add("unreachable")
                    do { try node.contacts.recordUnreachable(contactID: contact.id, now: context.nowMilliseconds, replaced: failure == .wrongPeer) } catch {
                        board.halt(error)
                    }
                case .timeout:
                    // Connected, but too slow for the contact's deadline, the pass budget or a link deadline.
                    counts.add("skipped_for_time")
                    board.skippedForTime(index: index, label: contact.label)
                case .stopped: board.halt()
                default:
                    counts.add("failed")
                    context.logger.warn("pull-broken", ["category": .of(failure)])
                }
            } catch {
                board.halt(error)
            }
        }
    }

    /// One pull from one contact: adds the offers newly stored (`collected`), already known (`duplicates`) and
    /// refused to `counts`, also when the pull is stopped or fails part-way (each frame's offers commit as it comes).
    private static func pull(_ contact: Contact, grant: HeldGrant, node: Node, incoming: IncomingOffers, dialer: LinkDialer,
                             context: JobContext, until: MonotonicInstant, counts: inout Counts) throws {
        let connection = try dialer.dial(contact, .pull, until: until)
        defer { connection.close() }
        let answer = try ProofExchange.prove(connection, grant: grant, identity: node.identity)
        guard answer == .accepted else {
            try dialer.forget(grant, answer: answer, contact: contact)
            counts.add(answer == .revoked ? "revoked" : "lapsed")
            return
        }
        if let address = contact.address { try node.contacts.recordAddress(address, contactID: contact.id, now: context.nowMilliseconds) }
        let decisions = try incoming.unreportedDecisions(from: contact.endpoint)
        try connection.send(try ContactAddress.advertising(["type": "pull", "decisions": LinkWire.decisions(decisions)], settings: context.settings))
        var collected = 0
        var duplicates = 0
        var refused = 0
        var seen = 0
        var first = true
        let limits = try GrantsSettings.offerLimits(context.settings)
        defer {
            counts.add("collected", collected)
            counts.add("duplicates", duplicates)
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
            var stored = 0
            try node.database.write { _ in
                (taken, refusedIDs, stored) = ([], [], 0)  // a retried transaction starts its frame again
                for offer in offers {
                    switch try incoming.receive(offer, from: contact.endpoint, limits: limits, now: context.nowMilliseconds) {
                    case .stored:
                        stored += 1
                        taken.append(offer.offerID)
                        if let name = offer.senderName { try node.contacts.recordClaimedName(name, contactID: contact.id) }
                    case .duplicate:
                        taken.append(offer.offerID)
                    case .refused:
                        refusedIDs.append(offer.offerID)
                    }
                }
            }
            // Counted once the frame's transaction has committed.
            collected += stored
            duplicates += taken.count - stored
            refused += refusedIDs.count
            try connection.send(LinkWire.ack(taken: taken, refused: refusedIDs))
        }
    }
}
