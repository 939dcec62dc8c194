import Runner

/// The local notifications raised for incoming offers (`notifications`): listed, and marked seen.
struct OfferNotifications {
    /// One notification with the offer it is about.
    struct Entry {
        let id: Int64
        let kind: String
        let offerID: String?
        let sender: EndpointID?
        let offerState: String?
        let createdAt: Int64
        let seenAt: Int64?
    }

    let database: Database
    let vault: Vault

    /// Every notification (only unseen ones with `unseenOnly`), newest first.
    func list(unseenOnly: Bool) throws -> [Entry] {
        try database.query("""
            SELECT n.id, n.kind, o.offer_id, o.from_endpoint_sealed, o.state, n.created_at, n.seen_at
            FROM notifications n LEFT JOIN incoming_offers o ON o.id = n.incoming_offer_id
            \(unseenOnly ? "WHERE n.seen_at IS NULL" : "") ORDER BY n.id DESC
            """).map { row in
            let sealed: [UInt8]? = try row.get(3)
            return Entry(id: try row.get(0), kind: try row.get(1), offerID: try row.get(2), sender: try sealed.map(vault.openEndpoint),
                         offerState: try row.get(4), createdAt: try row.get(5), seenAt: try row.get(6))
        }
    }

    /// Marks `ids` seen at `now` (those already seen keep their time); returns how many changed.
    func markSeen(_ ids: [Int64], now: Int64) throws -> Int {
        try database.write { db in
            var changed = 0
            for id in ids { changed += try db.execute("UPDATE notifications SET seen_at = ? WHERE id = ? AND seen_at IS NULL", [now, id]) }
            return changed
        }
    }
}

/// `job offers notifications [--unseen] [--mark-seen] [--json]`: the notifications raised for incoming offers, newest
/// first; `--mark-seen` marks the ones listed as seen.
struct OffersNotificationsCommand: Command {
    let path = ["offers", "notifications"]
    let summary = "list the notifications raised for incoming offers; --mark-seen marks those listed as seen"
    let options: [OptionSpec] = [
        .flag("--unseen", "only notifications not yet seen"),
        .flag("--mark-seen", "mark the notifications listed as seen"),
    ]

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let store = OfferNotifications(database: node.database, vault: node.vault)
        let entries = try store.list(unseenOnly: context.arguments.flag("--unseen"))
        let marked = context.arguments.flag("--mark-seen") ? try store.markSeen(entries.map(\.id), now: context.nowMilliseconds) : 0
        let directory = try PeerDirectory(node: node, now: context.nowMilliseconds)
        context.logger.info("notifications-listed", ["count": .int(entries.count), "marked_seen": .int(marked)])
        if context.jsonOutput {
            context.printJSON(["notifications": .array(entries.map { entry in
                ["id": .int(entry.id), "kind": .string(entry.kind), "offer_id": .optional(entry.offerID),
                 "from": .optional(entry.sender?.hex), "from_label": .optional(entry.sender.flatMap(directory.label)),
                 "offer_state": .optional(entry.offerState), "created_at": TimeText.json(entry.createdAt), "seen": .bool(entry.seenAt != nil)]
            }), "marked_seen": .number(marked)])
            return
        }
        if entries.isEmpty { context.print(context.arguments.flag("--unseen") ? "no unseen notifications" : "no notifications") }
        for entry in entries {
            let from = entry.sender.map { directory.label($0) ?? "unlisted device \($0.fingerprint)" } ?? "?"
            context.print("\(entry.seenAt == nil ? "new " : "    ") \(TimeText.text(entry.createdAt))  offer \(entry.offerID ?? "?") from \(from)  (\(entry.offerState ?? "gone"))")
        }
        if marked > 0 { context.print("marked \(marked) as seen") }
    }
}
