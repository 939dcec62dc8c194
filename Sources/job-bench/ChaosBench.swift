import Chaos
import Foundation

/// `chaos`: each job's pass run as a real process over a seeded store, SIGKILLed at a uniformly random
/// moment of its measured duration and rerun, until `--kills` kills per job have landed; after every round
/// the job's invariants are checked against a model computed from the seed alone (see `Sources/Chaos`).
///
/// The baseline, measured in the same run, is the undisturbed pass over the same store (round 0).
enum ChaosBench {
    /// `send-wakeups-sigterm`: send-wakeups with its passes stopped by SIGTERM instead (each token exactly once).
    static let jobs = ["clean-tokens", "send-wakeups", "send-wakeups-sigterm", "sweep-grants", "mint-pool", "pull-offers"]

    static func run(_ arguments: ArraySlice<String>) throws {
        if let index = arguments.firstIndex(of: "--job"), arguments.index(after: index) < arguments.endIndex,
           arguments[arguments.index(after: index)] == "relay-multihost" { return try MultiHostChaosBench.run(arguments) }
        var kills = 200
        var rows = 20_000
        var seed: UInt64 = 0xC4A05
        var selected = jobs
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--kills":
                guard let value = rest.popFirst(), let n = Int(value), n >= 1 else { throw BenchUsageError(message: "--kills needs a positive number") }
                kills = n
            case "--rows":
                guard let value = rest.popFirst(), let n = Int(value), (100...1_000_000).contains(n) else {
                    throw BenchUsageError(message: "--rows needs a number from 100 to 1000000")
                }
                rows = n
            case "--seed":
                guard let value = rest.popFirst(), let n = UInt64(value) else { throw BenchUsageError(message: "--seed needs a whole number") }
                seed = n
            case "--job":
                guard let value = rest.popFirst(), jobs.contains(value) else { throw BenchUsageError(message: "--job needs one of \(jobs.joined(separator: ", "))") }
                selected = [value]
            case "--help", "-h":
                print("usage: job-bench chaos [--kills N] [--rows N] [--seed S] [--job NAME]")
                print("  --kills N   SIGKILLs that must land per job (default 200)")
                print("  --rows N    rows seeded in each job's store (default 20000)")
                print("  --seed S    PRNG seed for the seed data and the kill moments (default \(0xC4A05))")
                print("  --job NAME  one job only: \(jobs.joined(separator: ", "))")
                print("  --job relay-multihost  several relay hosts on one PostgreSQL (its own options: --job relay-multihost --help)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        var reports: [ChaosLoop.Report] = []
        for name in selected {
            let directory = try RelayBenchSupport.scratch("chaos-\(name)")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var loop = ChaosLoop(process: ChaosProcess(executable: job, environment: ["HOME": directory, "PATH": "/usr/bin:/bin"]), kills: kills, seed: seed)
            loop.progress = { FileHandle.standardError.write(Data(("chaos " + $0 + "\n").utf8)) }
            let store = ChaosStore(directory: directory)
            let scenario: ChaosScenario
            switch name {
            case "clean-tokens": scenario = CleanTokensChaos(store: store, process: loop.process, tokens: rows, seed: seed)
            case "pull-offers": scenario = PullOffersChaos(directory: directory, process: loop.process, held: max(10, rows / 10), history: rows - rows / 10, seed: seed)
            case "mint-pool": scenario = MintPoolChaos(store: store, process: loop.process, size: min(rows, 100_000))
            case "sweep-grants": scenario = SweepGrantsChaos(store: store, process: loop.process, rows: rows, seed: seed)
            case "send-wakeups-sigterm":
                loop.signal = SIGTERM
                scenario = SendWakeupsChaos(store: store, process: loop.process, tokens: rows, seed: seed, graceful: true)
            default: scenario = SendWakeupsChaos(store: store, process: loop.process, tokens: rows, seed: seed)
            }
            print("chaos \(name): \(rows) rows, \(kills) kills…")
            let report = try loop.run(scenario, rows: rows)
            reports.append(report)
            for violation in report.violations.prefix(20) { print("  VIOLATION \(violation)") }
        }
        print("")
        print("job            rows     undisturbed s  kills  abandoned  missed  rounds  reruns  violations  total s")
        for r in reports {
            print(r.job.padding(toLength: 14, withPad: " ", startingAt: 0)
                  + String(format: " %-8d %13.3f  %5d  %9d  %6d  %6d  %6d  %10d  %7.1f",
                           r.rows, r.measuredSeconds, r.kills, r.abandonedPasses, r.passesFinishedBeforeKill, r.rounds, r.settlingPasses, r.violations.count, r.seconds))
        }
        print("kills: SIGKILLs that landed on a running pass; abandoned: of those, passes already in the ledger (taken over by the rerun);")
        print("missed: kill moments drawn after the pass had finished; reruns: undisturbed passes, including round 0 (the baseline).")
        let total = reports.reduce(0) { $0 + $1.violations.count }
        if total > 0 { throw BenchFailure("\(total) invariant violation(s)") }
    }
}
