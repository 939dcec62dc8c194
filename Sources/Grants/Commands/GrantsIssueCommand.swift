import Runner

/// `job grants issue --to ENDPOINT [--lifetime 30d|90d|365d|never]`: lets ENDPOINT reach this node.
///
/// Prints the one-line grant bundle on stdout — the only way a grant secret leaves the store. The idle lifetime
/// defaults to the `grants.lifetime` setting (90 days unless changed).
struct GrantsIssueCommand: Command {
    let path = ["grants", "issue"]
    let summary = "mint a grant that lets one endpoint reach this node; prints the bundle to hand over"
    let options: [OptionSpec] = [
        .required("--to", "ENDPOINT", "the endpoint id (64 hex) of the device being remembered"),
        .value("--lifetime", "30d|90d|365d|never", "idle lifetime (default: the grants.lifetime setting)"),
        .value("--label", "LABEL", "your own name for the device (shown for its offers, usable with revoke and block)"),
    ]
    let discussion = """
        Pairing, in three steps: the other device prints its endpoint id with 'job node show'; this node runs
        'job grants issue --to <that id>' and prints the one-line bundle, a secret; carry it to the other device by a
        channel you trust, where 'job grants accept --label NAME --addr HOST:PORT < bundle' stores it (HOST:PORT is
        where this node's serve-link listens). The other device can then offer to this node. Compare the fingerprint
        both sides print out of band. See docs/protocols/grants-and-link.md (3.1).
        """

    func run(_ context: JobContext) throws {
        let holder = try EndpointID(hex: try context.arguments.required("--to"))
        let lifetime = try GrantLifetime.parse(try context.arguments.value("--lifetime") ?? context.settings.string(GrantsSettings.lifetime))
        let label = try context.arguments.value("--label").map(LabelRule.validate)
        let node = try Node(context)
        guard holder != node.identity.endpoint else { throw JobError.usage("a grant for this node's own endpoint is pointless; --to names the other device") }
        let bundle = try node.issued.issue(to: holder, issuer: node.identity.endpoint, lifetime: lifetime, label: label, now: context.nowMilliseconds)
        context.logger.info("grant-issued", ["lifetime": lifetime == .never ? "never" : .int(lifetime.milliseconds! / 86_400_000)])
        if context.jsonOutput {
            context.printJSON(["bundle": .string(bundle.line), "lifetime": .string(lifetime.rawValue), "expires_at": TimeText.json(bundle.expiresAt)])
        } else {
            context.print(bundle.line)
        }
    }
}
