import Foundation
import Store

/// The `job_runs` ledger: one row per pass, written when it starts and completed when it ends.
///
/// Rows use the invocation's clock (`--now` when given, else the system clock), the same clock `maintain-store`
/// prunes them by: a pass under an emulated day is recorded, shown and pruned on that day. Durations are real.
package struct Ledger {
    let database: Database

    package init(database: Database) { self.database = database }

    /// One recorded pass.
    package struct Run: Sendable {
        package let id: Int64
        package let job: String
        package let startedAt: Int64
        package let finishedAt: Int64?
        package let outcome: String
        package let exitCode: Int?
        package let durationMilliseconds: Int?
        package let countsJSON: String
        package let reason: String?
    }

    /// Records a pass that started (outcome `running`); returns its id.
    func begin(job: String, startedAt: Int64) throws -> Int64 {
        try database.execute("INSERT INTO job_runs (job, started_at, outcome) VALUES (?, ?, 'running')", [job, startedAt])
        return database.lastInsertRowID
    }

    /// Records a pass that ended.
    func finish(id: Int64, outcome: JobResult.Outcome, exitCode: ExitCode, finishedAt: Int64, durationMilliseconds: Int, counts: Counts, reason: String?) throws {
        try database.execute("""
            UPDATE job_runs SET outcome = ?, exit_code = ?, finished_at = ?, duration_ms = ?, counts = ?, reason = ?
            WHERE id = ?
            """, [outcome.rawValue, Int(exitCode.rawValue), finishedAt, durationMilliseconds, counts.json.rendered(), reason, id])
    }

    /// Records a whole pass at once (a skip).
    func record(job: String, startedAt: Int64, outcome: JobResult.Outcome, exitCode: ExitCode, reason: String?) throws {
        try database.execute("""
            INSERT INTO job_runs (job, started_at, finished_at, outcome, exit_code, duration_ms, counts, reason)
            VALUES (?, ?, ?, ?, ?, 0, '{}', ?)
            """, [job, startedAt, startedAt, outcome.rawValue, Int(exitCode.rawValue), reason])
    }

    /// Marks passes of `job` still `running` as failed with reason `killed`: their process died without finishing
    /// its row (SIGKILL, OOM, power loss) and its lease was taken over. No exit code is known, so none is recorded.
    func abandonRunning(job: String, finishedAt: Int64) throws -> Int {
        try database.execute("""
            UPDATE job_runs SET outcome = 'failed', exit_code = NULL, finished_at = ?, reason = 'killed'
            WHERE job = ? AND outcome = 'running'
            """, [finishedAt, job])
    }

    /// Marks the `running` passes of `job` that started at `startedAt` as failed with reason `killed` (a pass
    /// among several sharing the work, whose own lease was taken over: the lease's acquisition time is its row's
    /// start).
    func abandonRunning(job: String, startedAt: Int64, finishedAt: Int64) throws -> Int {
        try database.execute("""
            UPDATE job_runs SET outcome = 'failed', exit_code = NULL, finished_at = ?, reason = 'killed'
            WHERE job = ? AND outcome = 'running' AND started_at = ?
            """, [finishedAt, job, startedAt])
    }

    /// The latest pass of each job.
    package func latestRuns() throws -> [Run] {
        try database.query("""
            SELECT r.id, r.job, r.started_at, r.finished_at, r.outcome, r.exit_code, r.duration_ms, r.counts, r.reason
            FROM job_runs r
            JOIN (SELECT job, max(id) AS id FROM job_runs GROUP BY job) latest ON latest.id = r.id
            ORDER BY r.job
            """).map(Ledger.run)
    }

    /// The latest pass of each job that ended with `outcome` (`completed`, `failed`).
    package func latestRuns(outcome: JobResult.Outcome) throws -> [String: Run] {
        let runs = try database.query("""
            SELECT r.id, r.job, r.started_at, r.finished_at, r.outcome, r.exit_code, r.duration_ms, r.counts, r.reason
            FROM job_runs r
            JOIN (SELECT job, max(id) AS id FROM job_runs WHERE outcome = ? GROUP BY job) latest ON latest.id = r.id
            """, [outcome.rawValue]).map(Ledger.run)
        return Dictionary(runs.map { ($0.job, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// All passes, newest first, at most `limit`.
    package func runs(job: String? = nil, limit: Int = 1000) throws -> [Run] {
        if let job {
            return try database.query("SELECT id, job, started_at, finished_at, outcome, exit_code, duration_ms, counts, reason FROM job_runs WHERE job = ? ORDER BY id DESC LIMIT ?", [job, limit]).map(Ledger.run)
        }
        return try database.query("SELECT id, job, started_at, finished_at, outcome, exit_code, duration_ms, counts, reason FROM job_runs ORDER BY id DESC LIMIT ?", [limit]).map(Ledger.run)
    }

    /// When `job` last completed with exit code 0, if ever; a skipped pass (lease held, disabled) is no success.
    package func lastSuccess(job: String) throws -> Int64? {
        try database.scalar("SELECT max(finished_at) FROM job_runs WHERE job = ? AND exit_code = 0 AND outcome = 'completed'", [job])
    }

    /// Deletes at most `batchSize` finished rows that started before `cutoff`; returns how many it deleted.
    package func prune(before cutoff: Int64, batchSize: Int) throws -> Int {
        try database.execute("""
            DELETE FROM job_runs WHERE id IN (
                SELECT id FROM job_runs WHERE started_at < ? AND outcome != 'running' ORDER BY id LIMIT ?)
            """, [cutoff, batchSize])
    }

    private static func run(_ row: Row) throws -> Run {
        Run(id: try row.get(0), job: try row.get(1), startedAt: try row.get(2), finishedAt: try row.get(3, as: Int64?.self),
            outcome: try row.get(4), exitCode: try row.get(5, as: Int?.self), durationMilliseconds: try row.get(6, as: Int?.self),
            countsJSON: try row.get(7), reason: try row.get(8, as: String?.self))
    }
}
