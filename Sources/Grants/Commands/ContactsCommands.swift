import Runner

/// `job contacts list [--json]`: remembered peers with their labels, fingerprints and state.
struct ContactsListCommand: Command {
    let path = ["contacts", "list"]
    let summary = "list remembered peers"

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let contacts = try node.contacts.all()
        let reachability = try contacts.map { contact in
            let held: Int = try node.database.scalar("SELECT count(*) FROM held_offers WHERE contact_id = ? AND state = 'held'", [contact.id]) ?? 0
            return ContactReachability.of(contact, holdsUsableGrant: try node.held.usable(contactID: contact.id) != nil, heldOffers: held)
        }
        if context.jsonOutput {
            context.printJSON(.array(zip(contacts, reachability).map { contact, reach in
                ["endpoint_id": .string(contact.endpoint.hex), "fingerprint": .string(contact.endpoint.fingerprint),
                 "label": .string(contact.label), "claimed_name": .optional(contact.remoteName),
                 "claimed_name_changed": .bool(contact.remoteNameChanged), "address": .optional(contact.address),
                 "status": .string(contact.status), "can_reach": .bool(reach != .pairAgain && reach != .notRecognized), "reachability": .string(reach.rawValue),
                 "created_at": TimeText.json(contact.createdAt)]
            }))
            return
        }
        if contacts.isEmpty { context.print("no contacts") }
        for (contact, reach) in zip(contacts, reachability) {
            var line = "\(contact.label)  \(contact.endpoint.fingerprint)  \(reach.text)"
            if contact.status == "revoked" { line += " (the other device removed this one)" }
            if contact.status == "lapsed" { line += " (the pairing went unused too long)" }
            if contact.remoteNameChanged { line += "  (the device now calls itself something else)" }
            context.print(line)
        }
    }
}

/// `job contacts rename CONTACT LABEL`: changes the local label (CONTACT is an endpoint id or the current label).
struct ContactsRenameCommand: Command {
    let path = ["contacts", "rename"]
    let summary = "change a contact's local label"
    let positionals = [PositionalSpec("CONTACT", "endpoint id or current label"), PositionalSpec("LABEL", "the new label")]

    func run(_ context: JobContext) throws {
        let label = try LabelRule.validate(context.arguments.positional(1)!)
        let node = try Node(context)
        let contact = try node.contacts.resolve(context.arguments.positional(0)!)
        try node.contacts.rename(contact.id, to: label)
        if context.jsonOutput { context.printJSON(["endpoint_id": .string(contact.endpoint.hex), "label": .string(label)]) }
        else { context.print("renamed to \(label)") }
    }
}

/// Deletes contacts with both directions' grants: held grants and offers go with the contact row; issued grants
/// are revoked (tombstoned, so the peer hears `revoked`) and the peer gets a best-effort revoke message.
enum ContactRemoval {
    /// Removes one contact; returns whether the peer was told.
    static func remove(_ contact: Contact, node: Node, context: JobContext) throws -> Bool {
        let grantIDs = try context.database.write { _ -> [[UInt8]] in
            let ids = try node.issued.revoke(peer: contact.endpoint, now: context.nowMilliseconds)
            try IncomingOffers(database: node.database, vault: node.vault).deleteAll(from: contact.endpoint)
            try node.contacts.delete(contact.id)
            return ids
        }
        return RevokeNotice.send(grantIDs: grantIDs, to: contact.endpoint, address: contact.address, node: node, context: context)
    }
}

/// `job contacts delete CONTACT`: forgets one peer, in both directions.
struct ContactsDeleteCommand: Command {
    let path = ["contacts", "delete"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "forget a contact: delete both directions' grants and revoke the issued side"
    let positionals = [PositionalSpec("CONTACT", "endpoint id or label")]

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let contact = try node.contacts.resolve(context.arguments.positional(0)!)
        let notified = try ContactRemoval.remove(contact, node: node, context: context)
        context.logger.info("contact-deleted", ["notified": .bool(notified)])
        if context.jsonOutput { context.printJSON(["deleted": 1, "peers_notified": .number(notified ? 1 : 0)]) }
        else { context.print("deleted \(contact.label)") }
    }
}

/// `job contacts delete-all`: forgets every peer and revokes every grant this node issued.
struct ContactsDeleteAllCommand: Command {
    let path = ["contacts", "delete-all"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "forget every contact and revoke every grant this node issued"

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        var deleted = 0
        var notified = 0
        for contact in try node.contacts.all() {
            try context.checkCancellation()
            if try ContactRemoval.remove(contact, node: node, context: context) { notified += 1 }
            deleted += 1
        }
        // Grants issued to endpoints that never became contacts are relationships too.
        var revoked = 0
        while true {
            try context.checkCancellation()
            let changed = try context.database.write { db in
                try db.execute("""
                    UPDATE grants_issued SET revoked_at = ?, revoke_reason = 'revoked'
                    WHERE id IN (SELECT id FROM grants_issued WHERE revoked_at IS NULL LIMIT 1000)
                    """, [context.nowMilliseconds])
            }
            revoked += changed
            if changed < 1000 { break }
        }
        context.logger.info("contacts-deleted", ["count": .int(deleted), "notified": .int(notified), "revoked_other": .int(revoked)])
        if context.jsonOutput { context.printJSON(["deleted": .number(deleted), "peers_notified": .number(notified)]) }
        else { context.print("deleted \(deleted) contact(s)") }
    }
}
