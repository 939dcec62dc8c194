import Foundation
import Store
import TestSupport

/// Builds stores for process-level tests.
enum StoreSeeding {
    /// Migrates a store at `path` with the real binary, then adds `count` finished ledger rows from 1970
    /// (far past any retention), so `maintain-store` has `count / 1000` batches to prune.
    /// `batchSize` sets `runs.prune-batch-size`, to make a pass long enough to signal or contend with.
    static func ledger(at path: String, home: String, oldRows count: Int, batchSize: Int = 1000) throws {
        let set = try JobProcess.run(["--store", path, "settings", "set", "runs.prune-batch-size", String(batchSize)], environment: JobProcess.environment(home: home))
        guard set.exitCode == 0 else { throw TestFailure("settings set failed: \(set.stderr)") }
        let db = try Database(path: path)
        try db.write { db in
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO job_runs (job, started_at, finished_at, outcome, exit_code, duration_ms, counts)
                SELECT 'seeded', 1000 + i, 1000 + i, 'completed', 0, 1, '{}' FROM n
                """, [count])
        }
    }

    /// Rows left of the seeded ledger.
    static func seededRows(at path: String) throws -> Int {
        try Database(path: path).scalar("SELECT count(*) FROM job_runs WHERE job = 'seeded'") ?? -1
    }

    /// Waits until `condition` holds or `timeout` passes.
    static func waitUntil(timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(10_000)
        }
        return try condition()
    }

    /// Holds `store` (a new file in rollback-journal mode) exclusively locked by a `sqlite3` process until the
    /// returned closure is called, so a `job` opening it blocks there, long after its start-up.
    static func lockedExclusively(_ store: String) throws -> () -> Void {
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        locker.arguments = [store]
        let input = Pipe()
        let output = Pipe()
        locker.standardInput = input
        locker.standardOutput = output
        try locker.run()
        input.fileHandleForWriting.write(Data("PRAGMA journal_mode=DELETE;\nCREATE TABLE t(x);\nBEGIN EXCLUSIVE;\nINSERT INTO t VALUES (1);\n.print locked\n".utf8))
        var seen = ""
        while !seen.contains("locked") { seen += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self) }
        return { try? input.fileHandleForWriting.close(); locker.waitUntilExit() }
    }
}
