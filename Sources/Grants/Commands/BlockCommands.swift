import Runner

/// `job block ENDPOINT`: refuse ENDPOINT at the link before any prompt; its proofs are answered exactly like unknown grants.
struct BlockCommand: Command {
    let path = ["block"]
    let summary = "block an endpoint (indistinguishable from an expired grant to that endpoint)"
    let positionals = [PositionalSpec("ENDPOINT", "the endpoint id (64 hex)")]

    func run(_ context: JobContext) throws {
        let endpoint = try EndpointID(hex: context.arguments.positional(0)!)
        let node = try Node(context)
        let added = try node.blocks.block(endpoint, now: context.nowMilliseconds)
        context.logger.info("endpoint-blocked", ["new": .bool(added)])
        if context.jsonOutput { context.printJSON(["blocked": true, "changed": .bool(added)]) }
        else { context.print(added ? "blocked" : "already blocked") }
    }
}

/// `job unblock ENDPOINT`: lifts a block.
struct UnblockCommand: Command {
    let path = ["unblock"]
    let summary = "lift a block on an endpoint"
    let positionals = [PositionalSpec("ENDPOINT", "the endpoint id (64 hex)")]

    func run(_ context: JobContext) throws {
        let endpoint = try EndpointID(hex: context.arguments.positional(0)!)
        let node = try Node(context)
        let removed = try node.blocks.unblock(endpoint)
        context.logger.info("endpoint-unblocked", ["changed": .bool(removed)])
        if context.jsonOutput { context.printJSON(["blocked": false, "changed": .bool(removed)]) }
        else { context.print(removed ? "unblocked" : "was not blocked") }
    }
}
