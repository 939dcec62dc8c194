import Runner

/// `job node show [--json]`: this node's endpoint id and its short fingerprint, for pairing and out-of-band checks.
struct NodeShowCommand: Command {
    let path = ["node", "show"]
    let summary = "print this node's endpoint id and fingerprint (the key is created on first use)"

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let endpoint = node.identity.endpoint
        if context.jsonOutput {
            context.printJSON(["endpoint_id": .string(endpoint.hex), "fingerprint": .string(endpoint.fingerprint)])
        } else {
            context.print("endpoint id  \(endpoint.hex)")
            context.print("fingerprint  \(endpoint.fingerprint)")
        }
    }
}
