import Cryptography
import Foundation
import Runner

/// Answers one link connection: the grant proof, then the protocol ALPN chose. A hostile or broken peer ends the
/// connection with a logged category and nothing changed in the store.
///
/// Every write goes through the process's one writer (`LinkStore.write`, group commit) and every reply that follows
/// a write is sent only after the commit holding it returned; reads use the store's read connections.
struct LinkServer {
    let store: LinkStore

    init(store: LinkStore) {
        self.store = store
    }

    private var logger: Logger { store.logger }

    /// Serves an authenticated connection until its exchange ends, it breaks, or its deadlines pass; then closes it.
    func serve(_ connection: LinkConnection) {
        do {
            switch connection.protocolName {
            case .offer: try serveOffer(connection)
            case .pull: try servePull(connection)
            case .revoke: try serveRevoke(connection)
            case .cancel: try CancelNotice.answer(connection, store: store)
            case .decision: try DecisionNotice.answer(connection, store: store)
            }
            connection.close()
        } catch {
            connection.abort()
            if connection.activity?.evicted != true { LinkServer.log(error, stage: "exchange", logger: logger) }
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
        let (answer, refusal) = try ProofExchange.answer(connection, store: store, now: store.nowMilliseconds)
        if let refusal {
            logger.info("proof-refused", ["protocol": .literal(connection.protocolName.logWord), "reason": .of(refusal)])
            return false
        }
        logger.info("proof-accepted", ["protocol": .literal(connection.protocolName.logWord), "answer": .of(answer)])
        connection.activity?.markProven()
        return true
    }

    /// `/vnidrop/offer/1`: one offer, stored as pending (never auto-accepted) and notified; the sender learns
    /// any decisions on its earlier offers in the reply, which is sent only once the offer's commit returned.
    private func serveOffer(_ connection: LinkConnection) throws {
        guard try admit(connection) else { return }
        let message = try connection.receive()
        try message.expect("offer")
        let offer = try OfferPayload(message)
        let limits = try store.read { context, _ in try GrantsSettings.offerLimits(context.settings) }
        let (remote, now) = (connection.remote, store.nowMilliseconds)
        let (receipt, decisions) = try store.write { node in
            try ContactAddress.refresh(from: message, remote: remote, node: node, now: now)
            let incoming = IncomingOffers(database: node.database, vault: node.vault)
            let receipt = try incoming.receive(offer, from: remote, limits: limits, now: now)
            if case .stored = receipt, let name = offer.senderName, let contact = try node.contacts.find(remote) {
                // Shown beside the user's own label, never in place of it (docs/protocols/grants-and-link.md §4.1).
                try node.contacts.recordClaimedName(name, contactID: contact.id)
            }
            return (receipt, try incoming.unreportedDecisions(from: remote))
        }
        let result: String
        switch receipt {
        case .stored, .duplicate: result = "pending"
        case .refused(let refusal):
            result = "refused"
            logger.info("offer-refused", ["reason": .of(refusal)])
        }
        try connection.send(["type": "offer-result", "result": .string(result), "decisions": LinkWire.decisions(decisions)])
        if !decisions.isEmpty {
            try store.write { node in
                try IncomingOffers(database: node.database, vault: node.vault).markReported(decisions, from: remote, now: now)
            }
        }
        if case .stored = receipt {
            logger.info("offer-received", ["delivery": "live"])
            try store.read { context, _ in NotifyCommand.run(kind: "incoming-offer", count: 1, context: context) }
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
        let remote = connection.remote
        let now = store.nowMilliseconds
        let (contactID, applied) = try store.write { node -> (Int64?, Int) in
            try ContactAddress.refresh(from: message, remote: remote, node: node, now: now)
            guard let contact = try node.contacts.find(remote) else { return (nil, 0) }
            let outgoing = OutgoingOffers(database: node.database, vault: node.vault)
            var applied = 0
            for decision in decisions where try outgoing.apply(decision, contactID: contact.id, now: now) { applied += 1 }
            return (contact.id, applied)
        }
        var delivered = 0
        guard let contactID else {
            // No contact for this grant holder: nothing can be held for it.
            try connection.send(["type": "offers", "offers": []])
            logger.info("pull-served", ["delivered": 0, "decisions": 0])
            return
        }
        var refused = 0
        var cursor: Int64 = 0
        while true {
            let batch = try store.read { _, node in
                try OutgoingOffers(database: node.database, vault: node.vault).held(contactID: contactID, after: cursor, limit: LinkWire.offersPerFrame)
            }
            try connection.send(["type": "offers", "offers": .array(batch.map(\.offer.json))])
            guard let last = batch.last else { break }
            cursor = last.rowID
            let reply = try connection.receive()
            try reply.expect("ack")
            let ack = try LinkWire.parseAck(reply)
            // Every offer of the frame exactly once, taken or refused.
            let sent = batch.map(\.offer.offerID)
            guard ack.taken.count + ack.refused.count == sent.count, Set(ack.taken + ack.refused) == Set(sent) else { throw LinkFailure.outOfOrder }
            let taken = ack.taken
            let at = store.nowMilliseconds
            delivered += try store.write { node in
                try OutgoingOffers(database: node.database, vault: node.vault).markDelivered(taken, contactID: contactID, now: at)
            }
            refused += ack.refused.count
        }
        logger.info("pull-served", ["delivered": .int(delivered), "refused": .int(refused), "decisions": .int(applied)])
    }

    /// `/vnidrop/revoke/1`: the peer says it revoked grants it issued to this node. Only grants held from that very
    /// peer are marked (the sweep drops them); the reply is the same whatever matched, sent once the commit returned.
    private func serveRevoke(_ connection: LinkConnection) throws {
        let message = try connection.receive()
        try message.expect("revoke")
        let ids = try message.strings("grant_ids", maxCount: LinkWire.maxRevokedGrants, maxBytes: 32)
        let (remote, now) = (connection.remote, store.nowMilliseconds)
        let marked = try store.write { node -> Int in
            guard let contact = try node.contacts.find(remote) else { return 0 }
            var marked = 0
            for text in ids {
                guard text.utf8.count == 32, let grantID = try? Hex.decode(text) else { throw LinkFailure.malformed }
                if try node.held.markRevokedByPeer(grantID: grantID, contactID: contact.id, now: now) { marked += 1 }
            }
            if marked > 0, try node.held.usable(contactID: contact.id) == nil {
                try node.contacts.markStatus(.revoked, contactID: contact.id)
            }
            return marked
        }
        try connection.send(["type": "done"])
        logger.info("revoke-received", ["marked": .int(marked)])
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
