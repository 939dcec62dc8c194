import Runner
import Store

/// `media-inbox`: processes frames heard from neighbours (see `InboxProcessor`) and deletes them once handled,
/// so raw frames — legacy file content among them — do not linger in the store.
struct MediaInboxJob: Job {
    let name = "media-inbox"
    let summary = "process heard mesh frames: announces, Noise handshakes and sessions, private files (0x20, 0x09, signed legacy)"
    let schedule = Schedule.every(minutes: 1)

    /// Frames per transaction (a frame may carry up to 1 MiB and a decryption).
    static let batchSize = 50
    static let seenRetentionMilliseconds: Int64 = 86_400_000

    func run(_ context: JobContext) throws -> JobResult {
        let db = context.database
        var counts = Counts()
        if context.dryRun {
            counts["pending_frames"] = try db.scalar("SELECT count(*) FROM mesh_inbox") ?? 0
            return .completed(counts)
        }
        guard try db.queryOne("SELECT 1 FROM mesh_node") != nil else { return .skipped("no-node") }
        let node = try MeshNode.open(context)
        let processor = InboxProcessor(node: node, media: MediaInbox(database: db, keyring: node.keyring,
                                                                     folder: MediaInbox.folder(forStore: context.storePath)))
        let expired = try db.write { db -> Int in
            _ = try db.execute("DELETE FROM mesh_seen WHERE seen_at < ?", [node.now - Self.seenRetentionMilliseconds])
            return try Reassembly(database: db).expire(now: node.now)
        }
        if expired > 0 { counts["fragments_expired"] = expired }

        var after: Int64 = 0
        while true {
            try context.checkCancellation()
            let rows = try db.query("SELECT id, frame FROM mesh_inbox WHERE id > ? ORDER BY id LIMIT ?", [after, Self.batchSize])
            guard let last = rows.last else { break }
            after = try last.get(0, as: Int64.self)
            let batch = try db.write { db -> Counts in
                var batch = Counts()
                for row in rows {
                    try processor.process(frame: try row.get(1, as: [UInt8].self), counts: &batch)
                    _ = try db.execute("DELETE FROM mesh_inbox WHERE id = ?", [try row.get(0, as: Int64.self)])
                }
                return batch
            }
            counts["frames"] += rows.count
            for (key, value) in batch.entries { counts[key] += value }
            context.committed = counts
        }
        return .completed(counts)
    }
}
