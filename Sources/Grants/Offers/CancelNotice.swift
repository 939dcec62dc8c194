import Runner

/// The best-effort cancel notice (`/vnidrop/cancel/1`): the sender tells the receiver that it cancelled offers the
/// receiver may already hold, so they stop waiting there for a decision. Correctness never depends on it: the
/// cancelled share is stopped and its ticket deleted on the sender anyway.
///
/// Offer ids are scoped by sender: the receiver cancels only offers from the connection's authenticated remote
/// endpoint, so nobody can cancel another sender's offer by naming its id. No grant proof is needed for that.
enum CancelNotice {
    /// Sends the notice to `contact` at its cached address; returns whether the contact confirmed it.
    static func send(offerIDs: [String], to contact: Contact, node: Node, context: JobContext) -> Bool {
        guard !offerIDs.isEmpty, let address = contact.address else { return false }
        do {
            let connection = try LinkDialer(node: node, context: context).dial(contact.endpoint, at: address, .cancel)
            defer { connection.close() }
            try connection.send(LinkWire.cancel(offerIDs))
            let reply = try connection.receive()
            try reply.expect("done")
            return true
        } catch let failure as LinkFailure {
            context.logger.info("cancel-notice-not-sent", ["category": .of(failure)])
            return false
        } catch {
            context.logger.info("cancel-notice-not-sent", ["category": "error"])
            return false
        }
    }

    /// The receiving side: marks the remote's own pending offers among the named ids cancelled. The reply is the
    /// same whatever matched.
    /// The write goes through serve-link's writer, and the reply is sent once its commit returned.
    static func answer(_ connection: LinkConnection, store: LinkStore) throws {
        let message = try connection.receive()
        try message.expect("cancel")
        let ids = try LinkWire.parseCancel(message)
        let (remote, now) = (connection.remote, store.nowMilliseconds)
        let cancelled = try store.write { node in
            try IncomingOffers(database: node.database, vault: node.vault).cancel(ids, from: remote, now: now)
        }
        try connection.send(["type": "done"])
        store.logger.info("cancel-received", ["cancelled": .int(cancelled)])
    }
}
