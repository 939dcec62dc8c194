import Foundation
import Runner
import Store

/// `job list`, `job status` and `job migrate`.
enum Builtins {
    static func list(catalog: Catalog, invocation: Invocation) {
        if invocation.jsonOutput {
            let jobs: [JSON] = catalog.jobs.map {
                ["name": .string($0.name), "summary": .string($0.summary),
                 "schedule": ["on_calendar": .string($0.schedule.onCalendar), "cron": .string($0.schedule.cron),
                              "randomized_delay_seconds": .number($0.schedule.randomizedDelaySeconds)]]
            }
            invocation.output.write(JSON.array(jobs).rendered() + "\n")
            return
        }
        let width = catalog.jobs.map(\.name.count).max() ?? 0
        for job in catalog.jobs {
            invocation.output.write(job.name.padded(to: width + 2) + job.summary + "\n")
        }
    }

    static func status(catalog: Catalog, invocation: Invocation) throws {
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
                    "exit_code": .optional(run.exitCode), "counts": countsJSON(run.countsJSON), "reason": .optional(run.reason)]
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
                        "counts": run.map { countsJSON($0.countsJSON) } ?? .object([]), "reason": .optional(since != nil ? run?.reason : shown?.reason),
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
            if case .object(let pairs) = countsJSON(run.countsJSON), !pairs.isEmpty {
                counts = pairs.map { "\($0.0)=\($0.1.rendered())" }.joined(separator: " ")
            } else { counts = "-" }
            table.append([job.name, outcome, finished, duration, lastCompleted, lastFailed] + next + [counts])
        }
        invocation.output.write(TextTable.render(table))
    }

    /// `job version` / `job --version`: one line, or one JSON object with `--json`.
    static func versionText(_ json: Bool) -> String {
        let commit = BuildInfo.commit(executablePath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        if json {
            return JSON.object([
                ("version", .string(BuildInfo.version)), ("commit", .optional(commit)), ("swift", .string(BuildInfo.swift)),
                ("libraries", .object(BuildInfo.libraries.map { ($0.name, JSON.string($0.version)) })),
            ]).rendered() + "\n"
        }
        let libraries = BuildInfo.libraries.map { "\($0.name) \($0.version)" }.joined(separator: ", ")
        return "job \(BuildInfo.version)\(commit.map { " (\($0.prefix(12)))" } ?? "") — Swift \(BuildInfo.swift), \(libraries)\n"
    }

    static func migrate(catalog: Catalog, invocation: Invocation) throws {
        let engine = invocation.storeEngine
        if engine == .sqlite {
            try PrivateFiles.createFolders(for: invocation.storePath)
            PrivateFiles.createStoreFile(invocation.storePath)
        } else {
            try LazyLibrary.postgresql.require()
        }
        let migrator = catalog.migrator(for: engine)
        let database: Database
        let applied: [String]
        do {
            database = try Database(path: invocation.storePath)
            applied = try migrator.migrate(database, now: Date().unixMilliseconds)
        } catch {
            throw StoreFailure.jobError(for: error)
        }
        let total = migrator.migrations.count
        if invocation.jsonOutput {
            // A PostgreSQL connection string may carry a password: it is never echoed.
            let store: JSON = engine == .postgresql ? .string("postgresql") : .string(database.path)
            invocation.output.write(JSON.object([("applied", .array(applied.map(JSON.string))), ("known", .number(total)), ("store", store)]).rendered() + "\n")
        } else {
            invocation.output.write(applied.isEmpty ? "store is up to date (\(total) migrations)\n" : "applied \(applied.count) migration(s): \(applied.joined(separator: ", "))\n")
        }
    }

    /// The ledger's counts column as JSON, in the order the pass reported them.
    static func countsJSON(_ text: String) -> JSON { (Counts(ledgerText: text) ?? Counts()).json }
}

/// Left-aligned columns separated by two spaces.
enum TextTable {
    static func render(_ rows: [[String]]) -> String {
        guard let columns = rows.map(\.count).max() else { return "" }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in i == row.count - 1 ? cell : cell.padded(to: widths[i] + 2) }.joined()
        }.joined(separator: "\n") + "\n"
    }
}
