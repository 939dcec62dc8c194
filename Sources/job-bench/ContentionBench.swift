import Chaos
import Foundation

/// `contention`: per job, eight passes started over and over plus a writer process playing the app
/// (`job relay register` / `job relay trigger` / `job grants issue`) on one store for `--seconds` (default 60); see `Contention`.
///
/// The baseline, in the same run, is the writer alone on an identical copy of the store for a fifth of the
/// time: its command latency with no pass running.
enum ContentionBench {
    static let jobs = ["clean-tokens", "send-wakeups", "sweep-grants"]

    static func run(_ arguments: ArraySlice<String>) throws {
        var seconds = 60.0
        var rows = 20_000
        var selected = jobs
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--seconds":
                guard let value = rest.popFirst(), let n = Double(value), n >= 1 else { throw BenchUsageError(message: "--seconds needs a number ≥ 1") }
                seconds = n
            case "--rows":
                guard let value = rest.popFirst(), let n = Int(value), n >= 100 else { throw BenchUsageError(message: "--rows needs a number ≥ 100") }
                rows = n
            case "--job":
                guard let value = rest.popFirst(), jobs.contains(value) else { throw BenchUsageError(message: "--job needs one of \(jobs.joined(separator: ", "))") }
                selected = [value]
            case "--help", "-h":
                print("usage: job-bench contention [--seconds S] [--rows N] [--job NAME]")
                print("  --seconds S  how long the eight passes and the writer run per job (default 60)")
                print("  --rows N     rows seeded in the store (default 20000)")
                print("  --job NAME   one job only: \(jobs.joined(separator: ", "))")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        var reports: [(Contention.Report, Contention.Report)] = []
        for name in selected {
            let directory = try RelayBenchSupport.scratch("contention-\(name)")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let base = ChaosProcess(executable: job, environment: ["HOME": directory, "PATH": "/usr/bin:/bin"])
            let store = ChaosStore(directory: directory)
            let scenario: ChaosScenario
            switch name {
            case "clean-tokens": scenario = CleanTokensChaos(store: store, process: base, tokens: rows, seed: 31)
            case "sweep-grants": scenario = SweepGrantsChaos(store: store, process: base, rows: rows, seed: 31)
            default: scenario = SendWakeupsChaos(store: store, process: base, tokens: rows, seed: 31)
            }
            try scenario.prepare()
            defer { scenario.finish() }
            let process = base.adding(scenario.passEnvironment)
            let start: Int64 = 1_780_000_000_000
            print("contention \(name): 8 passes + the writer for \(Int(seconds)) s on \(rows) rows…")
            // Baseline: the writer alone.
            try store.freshCopy()
            let alone = try Contention(process: process, store: store.store, job: name, parallel: 0, seconds: max(1, seconds / 5)) { _ in [] }.run(startNow: start)
            try store.freshCopy()
            let contention = Contention(process: process, store: store.store, job: name, seconds: seconds) { now in
                ["--now", "@\(now / 1000)", "--json", name]
            }
            let report = try contention.run(startNow: start)
            for failure in report.failures { print("  FAILURE \(failure)") }
            reports.append((report, alone))
        }
        print("")
        print("job           passes  worked  skipped(lease)  failed  busy  overlaps  writer cmds  writer fails  writer median/p99/max ms  alone median/max ms")
        for (r, alone) in reports {
            print(r.job.padding(toLength: 12, withPad: " ", startingAt: 0)
                  + String(format: "  %6d  %6d  %14d  %6d  %4d  %8d  %11d  %12d  %8.0f/%4.0f/%5.0f  %12.0f/%5.0f",
                           r.passes, r.worked, r.skippedLeaseHeld, r.failedPasses, r.busyReports, r.ledgerOverlaps, r.writerCommands, r.writerFailures,
                           r.writerMedianMilliseconds, r.writerP99Milliseconds, r.writerMaxMilliseconds, alone.writerMedianMilliseconds, alone.writerMaxMilliseconds))
        }
        print("busy: outputs reporting the store busy (must be 0); overlaps: ledger passes of the job working at the same time (must be 0);")
        print("writer ms: wall time of each `job relay …` command, process start included; busy timeout \(Contention.busyTimeoutMilliseconds) ms.")
        let broken = reports.filter { !$0.0.holds }.count
        if broken > 0 { throw BenchFailure("contention rules broken for \(broken) job(s)") }
    }
}
