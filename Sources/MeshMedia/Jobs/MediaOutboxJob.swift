import Runner
import Store

/// `media-outbox`: plans queued private-file sends (encrypted, consented legacy, wait, or a visible failure)
/// and prunes expired frames: a day for ordinary frames, the 30 s carry window for frames carrying a file in the clear
/// (`OutboxRetention`), erased with secure delete. It also announces the node when one is due
/// (`mesh.announce-interval-seconds` since the last announce, by hand or by a pass; counted `announced`).
struct MediaOutboxJob: Job {
    let name = "media-outbox"
    let summary = "plan queued private-file sends: encrypted when the peer proved privateMedia, legacy only with per-send consent"
    let schedule = Schedule.every(minutes: 1)

    /// Sends planned per transaction: each may encrypt and fragment up to 1 MiB, so batches stay small.
    static let batchSize = 20

    func run(_ context: JobContext) throws -> JobResult {
        let db = context.database
        var counts = Counts()
        if context.dryRun {
            counts["queued"] = try db.scalar("SELECT count(*) FROM mesh_sends WHERE status IN ('queued', 'waiting')") ?? 0
            counts["expired_frames"] = try db.scalar("""
                SELECT count(*) FROM mesh_outbox WHERE expires_at <= ? OR (expires_at IS NULL AND created_at < ?)
                """, [context.nowMilliseconds, context.nowMilliseconds - OutboxRetention.frameRetentionMilliseconds]) ?? 0
            return .completed(counts)
        }
        guard try db.queryOne("SELECT 1 FROM mesh_node") != nil else { return .skipped("no-node") }
        let retention = try MeshRetention(context.settings)
        let node = try MeshNode.open(context)
        try SecureDelete.enable(db)
        let upkeep = try db.write { db in try MeshUpkeep(database: db, keyring: node.keyring, now: node.now).run() }
        for (key, value) in upkeep.entries { counts[key] = value }
        for (key, value) in try retention.apply(context, now: node.now).entries { counts[key] = value }
        let interval = Int64(try context.settings.int("mesh.announce-interval-seconds")) * 1000
        if try node.announceDue(interval: interval) {
            try db.write { _ in try node.announce() }
            counts["announced"] = 1
            context.committed["announced"] = 1
        }
        let planner = OutboxPlanner(node: node, proofTimeoutMilliseconds: Int64(try context.settings.int("mesh.proof-timeout-seconds")) * 1000)

        // Each pass visits every open send once (ids above the last one seen), so waiting sends cannot loop.
        let total: Int = try db.scalar("SELECT count(*) FROM mesh_sends WHERE status IN ('queued', 'waiting')") ?? 0
        var planned = 0
        var after: Int64 = 0
        while true {
            try context.checkCancellation()
            let ids: [Int64] = try db.query("SELECT id FROM mesh_sends WHERE status IN ('queued', 'waiting') AND id > ? ORDER BY id LIMIT ?",
                                            [after, Self.batchSize]).map { try $0.get(0, as: Int64.self) }
            guard let last = ids.last else { break }
            after = last
            let outcomes = try db.write { _ in try ids.map { try planner.plan(sendID: $0) } }
            for outcome in outcomes { counts[outcome.rawValue] += 1; context.committed[outcome.rawValue] += 1 }
            planned += outcomes.count
            context.progress(done: planned, total: max(total, planned))
        }

        var pruned = 0
        while true {
            try context.checkCancellation()
            let deleted = try db.write { try OutboxRetention.pruneExpired($0, now: context.nowMilliseconds) }
            pruned += deleted
            if deleted < 1000 { break }
        }
        counts["expired_frames"] = pruned
        return .completed(counts)
    }
}
