import Runner

/// `job block PEER`: refuse PEER at the link before any prompt; its proofs are answered exactly like unknown grants.
/// PEER is a label, a unique fingerprint prefix or an endpoint id (`PeerDirectory`).
struct BlockCommand: Command {
    let path = ["block"]
    let summary = "block a device (indistinguishable from an expired grant to it): by label, fingerprint prefix or endpoint id"
    let positionals = [PositionalSpec("PEER", "a label, a unique fingerprint prefix (4+ hex digits) or the endpoint id (64 hex)")]

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let endpoint = try PeerDirectory(node: node, now: context.nowMilliseconds).resolve(context.arguments.positional(0)!)
        let added = try node.blocks.block(endpoint, now: context.nowMilliseconds)
        context.logger.info("endpoint-blocked", ["new": .bool(added)])
        if context.jsonOutput { context.printJSON(["blocked": true, "changed": .bool(added)]) }
        else { context.print(added ? "blocked" : "already blocked") }
    }
}

/// `job unblock PEER`: lifts a block.
struct UnblockCommand: Command {
    let path = ["unblock"]
    let summary = "lift a block: by label, fingerprint prefix or endpoint id"
    let positionals = [PositionalSpec("PEER", "a label, a unique fingerprint prefix (4+ hex digits) or the endpoint id (64 hex)")]

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let endpoint = try PeerDirectory(node: node, now: context.nowMilliseconds).resolve(context.arguments.positional(0)!)
        let removed = try node.blocks.unblock(endpoint)
        context.logger.info("endpoint-unblocked", ["changed": .bool(removed)])
        if context.jsonOutput { context.printJSON(["blocked": false, "changed": .bool(removed)]) }
        else { context.print(removed ? "unblocked" : "was not blocked") }
    }
}

/// `job block list [--json]`: the blocked devices, with their fingerprints and the user's labels.
struct BlockListCommand: Command {
    let path = ["block", "list"]
    let summary = "list blocked devices (fingerprint, label, when blocked)"

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let directory = try PeerDirectory(node: node, now: context.nowMilliseconds)
        let blocked = try node.blocks.all()
        if context.jsonOutput {
            context.printJSON(.array(blocked.map { entry in
                ["endpoint_id": .string(entry.endpoint.hex), "fingerprint": .string(entry.endpoint.fingerprint),
                 "label": .optional(directory.label(entry.endpoint)), "blocked_at": TimeText.json(entry.createdAt)]
            }))
            return
        }
        if blocked.isEmpty { context.print("no blocked devices") }
        for entry in blocked {
            context.print("\(entry.endpoint.fingerprint)  \(directory.label(entry.endpoint) ?? "(no label)")  blocked \(TimeText.text(entry.createdAt))")
        }
    }
}
