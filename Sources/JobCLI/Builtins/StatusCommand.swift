import Foundation
import Runner
import Store

/// `job status`: the last run of each job from the ledger — outcome, finished at, duration, counts, the last
/// completed and failed passes, and the next timer run where systemd has the timers.
struct StatusCommand: BuiltinCommand {
    let name = "status"
    let summary = "last run of each job: outcome, finished at, duration, counts"

    func run(_ context: BuiltinContext) throws {
        let catalog = context.catalog, invocation = context.invocation
        let database = try invocation.openStore(catalog)
        // A PostgreSQL store holds the relay role: only the jobs that run on it are listed.
        let jobs = catalog.jobs.filter { database.engine == .sqlite || $0.runsOnPostgreSQL }
        let ledger = Ledger(database: database)
        let latest = try ledger.latestRuns()
        let byJob = Dictionary(latest.map { ($0.job, $0) }, uniquingKeysWith: { a, _ in a })
        let completed = try ledger.latestRuns(outcome: .completed)
        let failed = try ledger.latestRuns(outcome: .failed)
        // A pass holding its lease is running, even when a later pass recorded `skipped` against that lease.
        let running = try Lease.running(database: database, now: Date().unixMilliseconds)
        let nextRuns = SystemdTimers.nextRuns(jobs: jobs.map(\.name))
        // A `running` row whose lease no live process holds (SIGKILL, OOM, a crash) will never finish: it is shown
        // as failed (killed), as the job's next pass records it, instead of `running` until that pass (maybe a day).
        func outcome(_ run: Ledger.Run) -> (outcome: String, reason: String?) {
            run.outcome == "running" && running[run.job] == nil ? ("failed", "killed") : (run.outcome, run.reason)
        }
        func time(_ ms: Int64?) -> JSON { ms.map { .string(Date(unixMilliseconds: $0).rfc3339) } ?? .null }
        func summary(_ run: Ledger.Run?) -> JSON {
            guard let run else { return .null }
            return ["started_at": time(run.startedAt), "finished_at": time(run.finishedAt), "duration_ms": .optional(run.durationMilliseconds),
                    "exit_code": .optional(run.exitCode), "counts": Self.countsJSON(run.countsJSON), "reason": .optional(run.reason)]
        }
        if invocation.jsonOutput {
            let rows: [JSON] = jobs.map { job in
                let run = byJob[job.name]
                let since = running[job.name]
                let shown = run.map(outcome)
                return ["job": .string(job.name), "outcome": since != nil ? .string("running") : .optional(shown?.outcome),
                        "running_since": time(since),
                        "started_at": time(run?.startedAt), "finished_at": time(run?.finishedAt),
                        "duration_ms": .optional(run?.durationMilliseconds), "exit_code": .optional(run?.exitCode),
                        "counts": run.map { Self.countsJSON($0.countsJSON) } ?? .object([]), "reason": .optional(since != nil ? run?.reason : shown?.reason),
                        "last_completed": summary(completed[job.name]), "last_failed": summary(failed[job.name]),
                        "next_run": .optional(nextRuns[job.name])]
            }
            invocation.output.write(JSON.array(rows).rendered() + "\n")
            return
        }
        let withTimers = !nextRuns.isEmpty
        var table: [[String]] = [["JOB", "LAST", "FINISHED", "DURATION", "LAST COMPLETED", "LAST FAILED"] + (withTimers ? ["NEXT RUN"] : []) + ["COUNTS"]]
        for job in jobs {
            let next = withTimers ? [nextRuns[job.name] ?? "-"] : []
            let lastCompleted = completed[job.name]?.finishedAt.map { Date(unixMilliseconds: $0).rfc3339 } ?? "-"
            let lastFailed = failed[job.name].map { run in
                (run.finishedAt.map { Date(unixMilliseconds: $0).rfc3339 } ?? "-") + (run.reason.map { " (\($0))" } ?? "")
            } ?? "-"
            if let since = running[job.name] {
                table.append([job.name, "running", "since " + Date(unixMilliseconds: since).rfc3339, "-", lastCompleted, lastFailed] + next + ["-"])
                continue
            }
            guard let run = byJob[job.name] else { table.append([job.name, "never", "-", "-", "-", "-"] + next + ["-"]); continue }
            let shown = outcome(run)
            let outcome = shown.outcome + (shown.reason.map { " (\($0))" } ?? "")
            let finished = run.finishedAt.map { Date(unixMilliseconds: $0).rfc3339 } ?? "-"
            let duration = run.durationMilliseconds.map { "\($0) ms" } ?? "-"
            let counts: String
            if case .object(let pairs) = Self.countsJSON(run.countsJSON), !pairs.isEmpty {
                counts = pairs.map { "\($0.0)=\($0.1.rendered())" }.joined(separator: " ")
            } else { counts = "-" }
            table.append([job.name, outcome, finished, duration, lastCompleted, lastFailed] + next + [counts])
        }
        invocation.output.write(TextTable.render(table))
    }

    /// The ledger's counts column as JSON, in the order the pass reported them.
    static func countsJSON(_ text: String) -> JSON { (Counts(ledgerText: text) ?? Counts()).json }
}
