import Runner

/// `job grants revoke --peer ENDPOINT`: tombstones every grant this node issued to ENDPOINT.
///
/// The peer's next proof is answered `revoked`. When the peer is a contact with a known address, a best-effort
/// revoke message is sent so its entry disappears promptly; correctness never depends on it arriving.
struct GrantsRevokeCommand: Command {
    let path = ["grants", "revoke"]
    let summary = "revoke every grant issued to one endpoint (its next proof is answered 'revoked')"
    let options: [OptionSpec] = [.required("--peer", "ENDPOINT", "the endpoint id (64 hex) to revoke")]

    func run(_ context: JobContext) throws {
        let peer = try EndpointID(hex: try context.arguments.required("--peer"))
        let node = try Node(context)
        let grantIDs = try node.issued.revoke(peer: peer, now: context.nowMilliseconds)
        let notified = RevokeNotice.send(grantIDs: grantIDs, to: peer, node: node, context: context)
        context.logger.info("grants-revoked", ["count": .int(grantIDs.count), "notified": .bool(notified)])
        if context.jsonOutput {
            context.printJSON(["revoked": .number(grantIDs.count), "peer_notified": .bool(notified)])
        } else if grantIDs.isEmpty {
            context.print("no live grant was issued to that endpoint; nothing changed")
        } else {
            context.print("revoked \(grantIDs.count) grant(s); the peer \(notified ? "was told" : "will learn at its next attempt")")
        }
    }
}
