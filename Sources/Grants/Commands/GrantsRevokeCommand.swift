import Runner

/// `job grants revoke PEER` (or `--peer PEER`): tombstones every grant this node issued to PEER — a label, a unique
/// fingerprint prefix or an endpoint id.
///
/// The peer's next proof is answered `revoked`. When the peer is a contact with a known address, a best-effort
/// revoke message is sent so its entry disappears promptly; correctness never depends on it arriving.
struct GrantsRevokeCommand: Command {
    let path = ["grants", "revoke"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "revoke every grant issued to one endpoint (its next proof is answered 'revoked')"
    let options: [OptionSpec] = [.value("--peer", "PEER", "the device: a label, a unique fingerprint prefix or the endpoint id (64 hex)")]
    let positionals = [PositionalSpec("PEER", "the device (instead of --peer)", optional: true)]

    func run(_ context: JobContext) throws {
        let given = [context.arguments.positional(0), context.arguments.value("--peer")].compactMap { $0 }
        guard given.count == 1 else { throw JobError.usage("'grants revoke' needs the device, as PEER or --peer (not both)") }
        let node = try Node(context)
        let peer = try PeerDirectory(node: node, now: context.nowMilliseconds).resolve(given[0])
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
