import Runner
import Store

/// `job mesh panic-wipe`: clears the node's keys, the identity cache and its pins, Noise sessions, every send with
/// its consent and its history, heard, queued and quarantined frames, reassembly buffers, and the delivered media —
/// then reports what it cleared. Build records and the alias policy are release data, not identity, and stay.
///
/// Nothing of it may survive in the store's files: the deletes run with `PRAGMA secure_delete=ON` (zeros over the
/// deleted cells and freed pages), `PRAGMA incremental_vacuum` then drops the free pages that still hold older
/// copies written before, and `PRAGMA wal_checkpoint(TRUNCATE)` writes the zeroed pages into the main file and
/// empties the WAL. The checkpoint waits (busy timeout) for readers that still see the store as it was; when one
/// keeps reading past that, the wipe says so and fails with 75 — the rows are gone but old copies remain in the
/// files until a checkpoint completes — and running it again finishes the job.
struct MeshPanicWipeCommand: Command {
    let path = ["mesh", "panic-wipe"]
    let summary = "erase keys, pins, sessions, sends, pending consents and incoming media, and report what was cleared"
    let discussion = """
        Deleted content is overwritten in the store file and its WAL is checkpointed and truncated. If another
        process keeps reading the store throughout the wait, the wipe fails with exit 75 saying copies remain in the
        files; run it again when that process has finished.
        """

    func run(_ context: JobContext) throws {
        let db = context.database
        try SecureDelete.enable(db)
        var counts = Counts()
        try db.write { db in
            counts["keys"] = try db.execute("DELETE FROM mesh_node", []) * 2
            counts["pins"] = try db.execute("DELETE FROM mesh_pins", [])
            counts["peers"] = try db.execute("DELETE FROM mesh_peers", [])
            counts["sessions"] = try db.execute("DELETE FROM mesh_sessions", [])
            counts["pending_consents"] = try db.scalar("SELECT count(*) FROM mesh_sends WHERE consent = 1") ?? 0
            counts["pending_sends"] = try db.scalar("SELECT count(*) FROM mesh_sends WHERE status IN ('queued', 'waiting')") ?? 0
            counts["sends"] = try db.execute("DELETE FROM mesh_sends", [])
            counts["deliveries"] = try db.execute("DELETE FROM mesh_deliveries", [])
            _ = try db.execute("DELETE FROM mesh_carried", [])
            counts["frames"] = try db.execute("DELETE FROM mesh_inbox", []) + (try db.execute("DELETE FROM mesh_outbox", []))
                + (try db.execute("DELETE FROM mesh_inbox_quarantine", []))
            counts["fragments"] = try db.execute("DELETE FROM mesh_fragments", [])
            _ = try db.execute("DELETE FROM mesh_fragment_sets", [])
            _ = try db.execute("DELETE FROM mesh_seen", [])
            // The mesh passes' history (their counts and times) goes too; a pass still running keeps its row.
            let jobs = MeshMediaModule.jobNames
            counts["pass_history"] = try db.execute("DELETE FROM job_runs WHERE job IN (\(jobs.map { _ in "?" }.joined(separator: ", "))) AND outcome != 'running'",
                                                    jobs.map { $0 as any DatabaseValueConvertible })
        }
        counts["media_files"] = MediaInbox.wipe(folder: MediaInbox.folder(forStore: context.storePath))
        // Free pages left by earlier deletes and updates (older session blobs, sent content) leave the file.
        try db.execute("PRAGMA incremental_vacuum")
        let truncated = try Self.checkpointAndTruncate(db)
        context.logger.info("mesh_panic_wipe", ["pins": .int(counts["pins"]), "sessions": .int(counts["sessions"]),
                                                 "media_files": .int(counts["media_files"]), "wal_truncated": .bool(truncated)])
        guard truncated else {
            throw JobError.transient("wipe-wal-busy", "the mesh node was wiped, but another process kept reading the store, so old copies of the erased data remain in the store's files until a checkpoint completes; run job mesh panic-wipe again when it has finished")
        }
        if context.jsonOutput {
            context.printJSON(["cleared": counts.json])
        } else {
            context.print("cleared: " + counts.entries.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`, waiting for readers up to the busy timeout; false when one still blocked it.
    static func checkpointAndTruncate(_ db: Database) throws -> Bool {
        do {
            guard let row = try db.queryOne("PRAGMA wal_checkpoint(TRUNCATE)") else { return false }
            return try row.get(0, as: Int.self) == 0
        } catch let error as StoreError where error.kind == .busy {
            return false
        }
    }
}
