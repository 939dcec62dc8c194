import Runner
import Store

/// `media-inbox`: processes frames heard from neighbours (see `InboxProcessor`) and deletes them once handled,
/// so raw frames — legacy file content among them — do not linger in the store (deleted with secure delete).
///
/// No frame can block the inbox (`InboxQuarantine`): frames go in batches, each frame marked as attempted first;
/// a batch that fails is replayed one frame per transaction, and a frame whose processing throws, or that a pass
/// died on, is moved aside into `mesh_inbox_quarantine` (counted `quarantined`) while the frames behind it are
/// processed. Received files raise a notification (`NotifyCommand`, kind `received-file`).
struct MediaInboxJob: Job {
    let name = "media-inbox"
    let summary = "process heard mesh frames: announces, Noise handshakes and sessions, private files (0x20, 0x09, signed legacy)"
    let schedule = Schedule.every(minutes: 1)
    let environmentKeys = [(name: "JOB_NOTIFY_COMMAND", help: "shell command run when files are received (JOB_NOTIFY_KIND=received-file, JOB_NOTIFY_COUNT set)")]

    /// Frames per transaction (a frame may carry up to 1 MiB and a decryption).
    static let batchSize = 50
    /// How long heard packets' hashes are kept for duplicate suppression: far longer than a frame can be accepted
    /// (a legacy file's clock window, a fragment set's lifetime), so a replay inside the window is always a duplicate.
    static let seenRetentionMilliseconds: Int64 = 86_400_000

    func run(_ context: JobContext) throws -> JobResult {
        let db = context.database
        var counts = Counts()
        if context.dryRun {
            counts["pending_frames"] = try db.scalar("SELECT count(*) FROM mesh_inbox") ?? 0
            counts["quarantined_frames"] = try db.scalar("SELECT count(*) FROM mesh_inbox_quarantine") ?? 0
            return .completed(counts)
        }
        guard try db.queryOne("SELECT 1 FROM mesh_node") != nil else { return .skipped("no-node") }
        let retention = try MeshRetention(context.settings)
        let node = try MeshNode.open(context)
        try SecureDelete.enable(db)
        let processor = InboxProcessor(node: node, media: MediaInbox(database: db, keyring: node.keyring,
                                                                     folder: MediaInbox.folder(forStore: context.storePath)))
        let quarantine = InboxQuarantine(database: db, now: node.now)
        // What a pass killed while writing a file left (only on file systems without O_TMPFILE).
        let leftovers = DurableFile.removeLeftovers(in: MediaInbox.folder(forStore: context.storePath))
        if leftovers > 0 { counts["temporary_files_removed"] = leftovers }
        let (expired, upkeep) = try db.write { db -> (Int, Counts) in
            let upkeep = try MeshUpkeep(database: db, keyring: node.keyring, now: node.now).run()
            _ = try db.execute("DELETE FROM mesh_seen WHERE seen_at < ?", [node.now - Self.seenRetentionMilliseconds])
            try quarantine.prune()
            return (try Reassembly(database: db).expire(now: node.now), upkeep)
        }
        for (key, value) in upkeep.entries { counts[key] = value }
        for (key, value) in try retention.apply(context, now: node.now).entries { counts[key] = value }
        if expired > 0 { counts["fragments_expired"] = expired }

        // Frames heard while the pass runs are processed too, so the total is the inbox as the pass found it.
        let total: Int = try db.scalar("SELECT count(*) FROM mesh_inbox") ?? 0
        var after: Int64 = 0
        while true {
            try context.checkCancellation()
            let frames = try db.query("SELECT id, frame, attempts, received_at FROM mesh_inbox WHERE id > ? ORDER BY id LIMIT ?",
                                      [after, Self.batchSize]).map(InboxQuarantine.Frame.init(row:))
            guard let last = frames.last else { break }
            after = last.id
            // A batch none of whose frames was attempted before goes in one transaction; otherwise (or when that
            // transaction fails because of a frame) each frame goes alone.
            let batchTried = frames.allSatisfy { $0.attempts == 0 }
            if batchTried {
                let batch: Counts? = try quarantine.attempt(frames) {
                    try db.write { db -> Counts in
                        var batch = Counts()
                        for frame in frames {
                            try processor.process(frame: frame.bytes, counts: &batch)
                            _ = try db.execute("DELETE FROM mesh_inbox WHERE id = ?", [frame.id])
                        }
                        return batch
                    }
                }
                if let batch {
                    counts["frames"] += frames.count
                    for (key, value) in batch.entries { counts[key] += value }
                    context.committed = counts
                    context.progress(done: counts["frames"], total: max(total, counts["frames"]))
                    continue
                }
            }
            for var frame in frames {
                try context.checkCancellation()
                if batchTried { frame.attempts += 1 }   // the mark of the failed batch
                let single: Counts? = try quarantine.attemptAlone(frame) {
                    try db.write { db -> Counts in
                        var single = Counts()
                        try processor.process(frame: frame.bytes, counts: &single)
                        _ = try db.execute("DELETE FROM mesh_inbox WHERE id = ?", [frame.id])
                        return single
                    }
                }
                counts["frames"] += 1
                if let single { for (key, value) in single.entries { counts[key] += value } } else { counts["quarantined"] += 1 }
                context.committed = counts
                context.progress(done: counts["frames"], total: max(total, counts["frames"]))
            }
        }
        NotifyCommand.run(kind: "received-file", count: counts["delivered_encrypted"] + counts["delivered_alias"] + counts["delivered_legacy"], context: context)
        return .completed(counts)
    }
}
