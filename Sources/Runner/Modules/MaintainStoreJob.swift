import Store

/// `maintain-store`: checks the store (quick_check, 73 when damaged), prunes old ledger rows, then the modules' own
/// tables (`StoreUpkeep`, SQLite stores), then `PRAGMA optimize`, an incremental vacuum step and a WAL checkpoint.
///
/// On a PostgreSQL store the ledger is pruned the same way, then `VACUUM (ANALYZE)` runs on the runner's and the
/// relay's tables (autovacuum does this too; the pass makes it happen right after the prune).
struct MaintainStoreJob: Job {
    let runsOnPostgreSQL = true
    let name = "maintain-store"
    let summary = "prune the run ledger past its retention, optimize, vacuum a step and checkpoint the WAL"
    let schedule = Schedule.daily(hour: 3, minute: 30)
    /// A damaged store is never written to: the runner's quick_check comes before the lease and the ledger row.
    let checksStoreBeforeWriting = true

    /// Free pages returned to the file system per pass.
    static let vacuumPages = 2000
    /// The modules' own pruning (SQLite stores), run after the ledger's.
    private(set) var upkeep: [StoreUpkeep] = []

    /// This job running `upkeep` too.
    func running(_ upkeep: [StoreUpkeep]) -> MaintainStoreJob {
        var copy = self
        copy.upkeep = upkeep
        return copy
    }

    func run(_ context: JobContext) throws -> JobResult {
        let db = context.database
        let retentionDays = try context.settings.int("runs.retention-days")
        // Rows deleted per transaction (at most 1,000, docs/design.md §4), so the app's own writes interleave.
        let batchSize = try context.settings.int("runs.prune-batch-size")
        let cutoff = context.nowMilliseconds - Int64(retentionDays) * 86_400_000
        var counts = Counts()

        if context.dryRun {
            counts["pruned_runs"] = try db.scalar("SELECT count(*) FROM job_runs WHERE started_at < ? AND outcome != 'running'", [cutoff]) ?? 0
            if db.engine == .sqlite { counts["free_pages"] = try db.scalar("PRAGMA freelist_count") ?? 0 }
            return .completed(counts)
        }

        let total: Int = try db.scalar("SELECT count(*) FROM job_runs WHERE started_at < ? AND outcome != 'running'", [cutoff]) ?? 0
        var pruned = 0
        while true {
            try context.checkCancellation()
            let deleted = try db.write { _ in try Ledger(database: db).prune(before: cutoff, batchSize: batchSize) }
            pruned += deleted
            context.committed["pruned_runs"] = pruned
            context.progress(done: pruned, total: total)
            if deleted < batchSize { break }
        }
        counts["pruned_runs"] = pruned

        try context.checkCancellation()
        if db.engine == .postgresql {
            // "VACUUM reclaims storage occupied by dead tuples … ANALYZE: Updates statistics used by the planner."
            // It cannot run inside a transaction block; each table is its own statement.
            let tables: [String] = try db.query("""
                SELECT table_name::text FROM information_schema.tables
                WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name
                """).map { try $0.get(0) }
            for table in tables {
                try context.checkCancellation()
                try db.execute("VACUUM (ANALYZE) \"\(table)\"")
            }
            counts["vacuumed_tables"] = tables.count
            return .completed(counts)
        }
        for task in upkeep {
            try context.checkCancellation()
            for (key, value) in try task.run(context).entries { counts[key] += value; context.committed[key] += value }
        }

        // "Applications with short-lived database connections … should run "PRAGMA optimize;" once, just prior to
        // closing each database connection." — PRAGMA optimize. This pass is that moment for the whole store.
        // Inside a write transaction: run on its own, the pragma reads (it compares each table with its statistics)
        // and then runs ANALYZE, which writes: a read transaction upgraded to a write one, and "if some other database
        // connection has already modified the database or is already in the process of modifying the database, then
        // upgrading to a write transaction is not possible and the write statement will fail with SQLITE_BUSY"
        // (lang_transaction.html) — at once, since SQLite consults the busy handler only for a connection that holds
        // no transaction yet. BEGIN IMMEDIATE takes the write lock first, waiting like every other statement
        // (MaintainStoreContentionTests).
        try db.write { db in try db.execute("PRAGMA optimize") }

        // "The incremental_vacuum pragma causes up to N pages to be removed from the freelist." Only effective on
        // stores created with auto_vacuum=INCREMENTAL (every store this program creates).
        let freeBefore: Int = try db.scalar("PRAGMA freelist_count") ?? 0
        try db.write { db in try db.execute("PRAGMA incremental_vacuum(\(MaintainStoreJob.vacuumPages))") }
        let freeAfter: Int = try db.scalar("PRAGMA freelist_count") ?? 0
        counts["vacuumed_pages"] = max(0, freeBefore - freeAfter)

        // PASSIVE: "Checkpoint as many frames as possible without waiting for any database readers or writers to
        // finish" — maintenance never stalls the app. Columns: busy, log frames, checkpointed frames.
        if let row = try db.queryOne("PRAGMA wal_checkpoint(PASSIVE)") {
            counts["checkpointed_frames"] = max(0, try row.get(2, as: Int.self))
        }
        return .completed(counts)
    }
}
