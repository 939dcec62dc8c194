import Cryptography
import Foundation
import Runner

/// Answers one link connection: the grant proof, then the protocol ALPN chose. A hostile or broken peer ends the
/// connection with a logged category and nothing changed in the store.
struct LinkServer {
    let node: Node
    let context: JobContext
    let incoming: IncomingOffers
    let outgoing: OutgoingOffers

    init(node: Node, context: JobContext) {
        self.node = node
        self.context = context
        incoming = IncomingOffers(database: node.database, vault: node.vault)
        outgoing = OutgoingOffers(database: node.database, vault: node.vault)
    }

    /// Serves an authenticated connection until its exchange ends, it breaks, or its deadlines pass; then closes it.
    func serve(_ connection: LinkConnection) {
        do {
            switch connection.protocolName {
            case .offer: try serveOffer(connection)
            case .pull: try servePull(connection)
            case .revoke: try serveRevoke(connection)
            case .cancel: try CancelNotice.answer(connection, incoming: incoming, context: context)
            case .decision: try DecisionNotice.answer(connection, node: node, outgoing: outgoing, context: context)
            }
            connection.close()
        } catch {
            connection.abort()
            if connection.activity?.evicted != true { LinkServer.log(error, stage: "exchange", logger: context.logger) }
        }
    }

    /// Logs why a connection ended, by category; a connection cut because the process is stopping is not logged
    /// (`link-stopped` says so once).
    static func log(_ error: Error, stage: StaticString, logger: Logger) {
        if let failure = error as? LinkFailure {
            if failure == .stopped { return }
            logger.warn("link-closed", ["stage": .literal(stage), "category": .of(failure)])
        } else if let failure = error as? JobError {
            logger.error("link-failed", ["stage": .literal(stage), "category": .category(failure)])
        } else {
            logger.error("link-failed", ["stage": .literal(stage), "category": "internal"])
        }
    }

    /// The proof step; returns true when the client may go on.
    private func admit(_ connection: LinkConnection) throws -> Bool {
        let (answer, refusal) = try ProofExchange.answer(connection, node: node, now: context.nowMilliseconds)
        if let refusal {
            context.logger.info("proof-refused", ["protocol": .literal(connection.protocolName.logWord), "reason": .of(refusal)])
            return false
        }
        context.logger.info("proof-accepted", ["protocol": .literal(connection.protocolName.logWord), "answer": .of(answer)])
        connection.activity?.markProven()
        return true
    }

    /// `/vnidrop/offer/1`: one offer, stored as pending (never auto-accepted) and notified; the sender learns
    /// any decisions on its earlier offers in the reply.
    private func serveOffer(_ connection: LinkConnection) throws {
        guard try admit(connection) else { return }
        let message = try connection.receive()
        try message.expect("offer")
        let offer = try OfferPayload(message)
        try ContactAddress.refresh(from: message, remote: connection.remote, node: node, now: context.nowMilliseconds)
        let limits = try GrantsSettings.offerLimits(context.settings)
        let now = context.nowMilliseconds
        let receipt = try incoming.receive(offer, from: connection.remote, limits: limits, now: now)
        if case .stored = receipt, let name = offer.senderName, let contact = try node.contacts.find(connection.remote) {
            // Shown beside the user's own label, never in place of it (docs/protocols/grants-and-link.md §4.1).
            try node.contacts.recordClaimedName(name, contactID: contact.id)
        }
        let decisions = try incoming.unreportedDecisions(from: connection.remote)
        let result: String
        switch receipt {
        case .stored, .duplicate: result = "pending"
        case .refused(let refusal):
            result = "refused"
            context.logger.info("offer-refused", ["reason": .of(refusal)])
        }
        try connection.send(["type": "offer-result", "result": .string(result), "decisions": LinkWire.decisions(decisions)])
        try incoming.markReported(decisions, from: connection.remote, now: now)
        if case .stored = receipt {
            context.logger.info("offer-received", ["delivery": "live"])
            NotifyCommand.run(kind: "incoming-offer", count: 1, context: context)
        }
    }

    /// `/vnidrop/pull/1`: applies the receiver's decisions, then hands over held offers in frames of up to five,
    /// each offer once per connection, marking each delivered only once the puller took it in; an offer the puller
    /// refused (its limits, or this node may not offer to it) stays held. An empty `offers` frame ends the exchange.
    private func servePull(_ connection: LinkConnection) throws {
        guard try admit(connection) else { return }
        let message = try connection.receive()
        try message.expect("pull")
        let decisions = try LinkWire.parseDecisions(message)
        try ContactAddress.refresh(from: message, remote: connection.remote, node: node, now: context.nowMilliseconds)
        var applied = 0
        var delivered = 0
        guard let contact = try node.contacts.find(connection.remote) else {
            // No contact for this grant holder: nothing can be held for it.
            try connection.send(["type": "offers", "offers": []])
            context.logger.info("pull-served", ["delivered": 0, "decisions": 0])
            return
        }
        for decision in decisions where try outgoing.apply(decision, contactID: contact.id, now: context.nowMilliseconds) { applied += 1 }
        var refused = 0
        var cursor: Int64 = 0
        while true {
            let batch = try outgoing.held(contactID: contact.id, after: cursor, limit: LinkWire.offersPerFrame)
            try connection.send(["type": "offers", "offers": .array(batch.map(\.offer.json))])
            guard let last = batch.last else { break }
            cursor = last.rowID
            let reply = try connection.receive()
            try reply.expect("ack")
            let ack = try LinkWire.parseAck(reply)
            // Every offer of the frame exactly once, taken or refused.
            let sent = batch.map(\.offer.offerID)
            guard ack.taken.count + ack.refused.count == sent.count, Set(ack.taken + ack.refused) == Set(sent) else { throw LinkFailure.outOfOrder }
            delivered += try outgoing.markDelivered(ack.taken, contactID: contact.id, now: context.nowMilliseconds)
            refused += ack.refused.count
        }
        context.logger.info("pull-served", ["delivered": .int(delivered), "refused": .int(refused), "decisions": .int(applied)])
    }

    /// `/vnidrop/revoke/1`: the peer says it revoked grants it issued to this node. Only grants held from that very
    /// peer are marked (the sweep drops them); the reply is the same whatever matched.
    private func serveRevoke(_ connection: LinkConnection) throws {
        let message = try connection.receive()
        try message.expect("revoke")
        let ids = try message.strings("grant_ids", maxCount: LinkWire.maxRevokedGrants, maxBytes: 32)
        var marked = 0
        if let contact = try node.contacts.find(connection.remote) {
            try node.database.write { _ in
                for text in ids {
                    guard text.utf8.count == 32, let grantID = try? Hex.decode(text) else { throw LinkFailure.malformed }
                    if try node.held.markRevokedByPeer(grantID: grantID, contactID: contact.id, now: context.nowMilliseconds) { marked += 1 }
                }
                if marked > 0, try node.held.usable(contactID: contact.id) == nil {
                    try node.contacts.markStatus(.revoked, contactID: contact.id)
                }
            }
        }
        try connection.send(["type": "done"])
        context.logger.info("revoke-received", ["marked": .int(marked)])
    }
}

extension LinkProtocolName {
    /// A fixed word for logs.
    var logWord: StaticString {
        switch self {
        case .offer: return "offer"
        case .pull: return "pull"
        case .revoke: return "revoke"
        case .cancel: return "cancel"
        case .decision: return "decision"
        }
    }
}

/// Offer refusals are fixed words, fit for the link log.
extension OfferLimits.Refusal: LogWord {}
