import Cryptography
import Runner

/// The best-effort revoke message (docs/protocols/grants-and-link.md §3.3): tells a reachable peer which grants were revoked so its entry
/// disappears promptly. Correctness never depends on it: the revoked grant is refused at its next proof anyway.
enum RevokeNotice {
    /// Sends the notice when `peer` is a contact with an address (or `address` is given, for a contact just deleted);
    /// returns whether the peer confirmed it.
    static func send(grantIDs: [[UInt8]], to peer: EndpointID, address: String? = nil, node: Node, context: JobContext) -> Bool {
        guard !grantIDs.isEmpty else { return false }
        let known = (try? node.contacts.find(peer)).flatMap { $0 }
        guard let target = known?.address ?? address else { return false }
        do {
            let connection = try LinkDialer(node: node, context: context).dial(peer, at: target, .revoke)
            defer { connection.close() }
            try connection.send(["type": "revoke", "grant_ids": .array(grantIDs.prefix(LinkWire.maxRevokedGrants).map { .string(Hex.encode($0)) })])
            let reply = try connection.receive()
            try reply.expect("done")
            return true
        } catch let failure as LinkFailure {
            context.logger.info("revoke-notice-not-sent", ["category": .of(failure)])
            return false
        } catch {
            context.logger.info("revoke-notice-not-sent", ["category": "error"])
            return false
        }
    }
}
