import Runner

/// `job grants list [--json]`: grants this node issued and grants it holds — never their secrets.
struct GrantsListCommand: Command {
    let path = ["grants", "list"]
    let summary = "list issued and held grants (never secrets)"

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let now = context.nowMilliseconds
        let issued = try node.issued.list(now: now)
        let held = try node.held.list(contacts: node.contacts)
        if context.jsonOutput {
            context.printJSON([
                "issued": .array(issued.map { grant in
                    ["grant_id": .string(grant.grantID), "to": .string(grant.peer.hex), "to_fingerprint": .string(grant.peer.fingerprint),
                     "label": .optional(grant.label), "state": .string(grant.state), "lifetime": .string(grant.lifetime),
                     "created_at": TimeText.json(grant.createdAt), "expires_at": TimeText.json(grant.expiresAt)]
                }),
                "held": .array(held.map { grant in
                    ["grant_id": .string(grant.grantID), "from": .string(grant.contact.endpoint.hex), "label": .string(grant.contact.label),
                     "state": .string(grant.state), "created_at": TimeText.json(grant.createdAt), "expires_at": TimeText.json(grant.expiresAt)]
                }),
            ])
            return
        }
        context.print("issued (\(issued.count)):")
        for grant in issued {
            context.print("  \(grant.grantID)  to \(grant.label.map { "\($0) " } ?? "")(\(grant.peer.fingerprint))  \(grant.state)  lifetime \(grant.lifetime)  expires \(TimeText.text(grant.expiresAt))")
        }
        context.print("held (\(held.count)):")
        for grant in held {
            context.print("  \(grant.grantID)  from \(grant.contact.label) (\(grant.contact.endpoint.fingerprint))  \(grant.state)")
        }
    }
}
