import Runner

/// The best-effort decision notice (`/vnidrop/decision/1`): right after the user declines (or accepts) an offer,
/// the receiver tells the sender, so a declined share stops promptly (docs/protocols/grants-and-link.md §4, step 7) instead of at the next link
/// contact. Correctness never depends on it: unreported decisions still ride on the next offer or pull.
///
/// Offer ids are scoped by sender: the sender applies a decision only to offers it made to the connection's
/// authenticated remote endpoint, so nobody can decide another receiver's offer by naming its id. No grant proof is
/// needed for that, as for the cancel notice.
enum DecisionNotice {
    /// Sends every decision not yet reported to `sender`, when it is a contact with a cached address; marks them
    /// reported once the sender confirmed. Returns whether it did.
    static func send(to sender: EndpointID, node: Node, context: JobContext) -> Bool {
        let incoming = IncomingOffers(database: node.database, vault: node.vault)
        do {
            guard let contact = try node.contacts.find(sender), let address = contact.address else { return false }
            let decisions = try incoming.unreportedDecisions(from: sender)
            guard !decisions.isEmpty else { return false }
            let connection = try LinkDialer(node: node, context: context).dial(sender, at: address, .decision)
            defer { connection.close() }
            try connection.send(["type": "decisions", "decisions": LinkWire.decisions(decisions)])
            let reply = try connection.receive()
            try reply.expect("done")
            try incoming.markReported(decisions, from: sender, now: context.nowMilliseconds)
            try node.contacts.recordAddress(address, contactID: contact.id, now: context.nowMilliseconds)
            return true
        } catch let failure as LinkFailure {
            context.logger.info("decision-notice-not-sent", ["category": .of(failure)])
            return false
        } catch {
            context.logger.info("decision-notice-not-sent", ["category": "error"])
            return false
        }
    }

    /// The sender's side: applies the remote's decisions to offers made to it. The reply is the same whatever matched.
    /// The write goes through serve-link's writer, and the reply is sent once its commit returned.
    static func answer(_ connection: LinkConnection, store: LinkStore) throws {
        let message = try connection.receive()
        try message.expect("decisions")
        let decisions = try LinkWire.parseDecisions(message)
        let (remote, now) = (connection.remote, store.nowMilliseconds)
        let applied = try store.write { node in
            guard let contact = try node.contacts.find(remote) else { return 0 }
            let outgoing = OutgoingOffers(database: node.database, vault: node.vault)
            var applied = 0
            for decision in decisions where try outgoing.apply(decision, contactID: contact.id, now: now) { applied += 1 }
            return applied
        }
        try connection.send(["type": "done"])
        store.logger.info("decisions-received", ["applied": .int(applied)])
    }
}
