import Chaos
import Foundation

/// `chaos --job relay-multihost`: three `serve-relay` and three `send-wakeups` processes on one PostgreSQL store,
/// triggers over HTTP from concurrent clients, random SIGKILLs throughout and one PostgreSQL crash, judged by the
/// independent model (`MultiHostRelayChaos`). Full size by default: 50,000 Device IDs, 100,000 triggers.
///
/// `--job-binary PATH` runs another build of `job` (an older commit's, to see the same judge fail on it) under this
/// harness and judge; `--pause-every S` adds passes still pushing long after their start (SIGSTOP and SIGCONT,
/// `PassPauser`).
enum MultiHostChaosBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var configuration = MultiHostRelayChaos.Configuration()
        configuration.devices = 50_000
        configuration.triggers = 100_000
        configuration.idleDevices = 5_000
        configuration.clients = 32
        configuration.triggerSeconds = 60
        configuration.killInterval = 0.3...1.5
        configuration.killSecondsAfterTriggers = 35
        configuration.settleTimeoutSeconds = 300
        var jobBinary: String?
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--job": _ = rest.popFirst()
            case "--devices": configuration.devices = try BenchOption.integer(&rest, option, in: 10...1_000_000)
            case "--triggers": configuration.triggers = try BenchOption.integer(&rest, option, in: 10...10_000_000)
            case "--seconds": configuration.triggerSeconds = Double(try BenchOption.integer(&rest, option, in: 1...3600))
            case "--clients": configuration.clients = try BenchOption.integer(&rest, option, in: 1...256)
            case "--seed": configuration.seed = try BenchOption.seed(&rest)
            case "--job-binary":
                guard let path = rest.popFirst(), FileManager.default.isExecutableFile(atPath: path) else {
                    throw BenchUsageError(message: "--job-binary needs the path of a job executable")
                }
                jobBinary = URL(fileURLWithPath: path).standardizedFileURL.path
            case "--pause-every":
                let seconds = Double(try BenchOption.integer(&rest, option, in: 1...600))
                configuration.pauseEvery = seconds * 0.5...seconds * 1.5
            case "--pause-seconds":
                guard let value = rest.popFirst(), let range = Self.range(value) else {
                    throw BenchUsageError(message: "--pause-seconds needs MIN-MAX, whole seconds from 1 to 600 (e.g. 32-50)")
                }
                configuration.pauseSeconds = range
            case "--help", "-h":
                print("usage: job-bench chaos --job relay-multihost [--devices N] [--triggers N] [--seconds S] [--clients N] [--seed S]")
                print("                         [--job-binary PATH] [--pause-every S] [--pause-seconds MIN-MAX]")
                print("  --devices N   provisioned Device IDs that get triggers (default 50000; a tenth more are never triggered)")
                print("  --triggers N  triggers spread over them (default 100000; at most 10 a Device ID, the rate limit)")
                print("  --seconds S   planned length of the trigger phase (default 60)")
                print("  --clients N   concurrent HTTP clients (default 32)")
                print("  --seed S      PRNG seed of the plan, the kills and the pauses (default \(configuration.seed))")
                print("  --job-binary PATH  the job executable to run (default: the one built beside job-bench), e.g. an")
                print("                older commit's build, judged by this harness")
                print("  --pause-every S  while the kills last, SIGSTOP a pass that has its APNs connection open every S s")
                print("                on average (0.5-1.5 S), at most two at once, and SIGCONT it after --pause-seconds:")
                print("                passes still pushing long after they started (default: no pauses)")
                print("  --pause-seconds MIN-MAX  each pause's length, drawn uniformly (default 32-50)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        guard configuration.triggers <= configuration.devices * 10 else { throw BenchUsageError(message: "--triggers may be at most 10 per Device ID (the rate limit)") }
        configuration.idleDevices = max(1, configuration.devices / 10)
        let job = try jobBinary ?? RelayBenchSupport.jobExecutable()
        let directory = try RelayBenchSupport.scratch("chaos-relay-multihost")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        print("chaos relay-multihost: 3 serve-relay + 3 send-wakeups on one PostgreSQL, \(configuration.devices) Device IDs, \(configuration.triggers) triggers…")
        print("  job: \(job)")
        print("  load average (1, 5, 15 min) at the start: \(Self.loadAverage())")
        if let every = configuration.pauseEvery {
            print("  pauses: a pushing pass SIGSTOPped every \(Int(every.lowerBound))-\(Int(every.upperBound)) s for "
                  + "\(Int(configuration.pauseSeconds.lowerBound))-\(Int(configuration.pauseSeconds.upperBound)) s")
        }
        let chaos = MultiHostRelayChaos(executable: job, directory: directory, configuration: configuration)
        chaos.progress = { FileHandle.standardError.write(Data(("chaos " + $0 + "\n").utf8)) }
        let r = try chaos.run()
        for violation in r.violations.prefix(20) { print("  VIOLATION \(violation)") }
        let exits = r.passExits.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
        print("  triggers: \(r.triggersAccepted)/\(r.triggersPlanned) accepted, \(r.triggerRequests) requests (\(r.triggerRetries) retried: 503 or cut off)")
        print("  pushes received by the stand-in: \(r.pushes), tokens pushed: \(r.tokensPushed)")
        print("  closest two arrivals of one token: \(r.closestPairMilliseconds.map { "\($0) ms" } ?? "none pushed twice")")
        print("  kills: \(r.serveRelayKills) serve-relay, \(r.sendWakeupsKills) send-wakeups (of \(r.killsSent) SIGKILLs sent; the others found the pass done); PostgreSQL crashes: \(r.postgresRestarts)")
        print("  send-wakeups passes: \(r.passes) (exit statuses \(exits))")
        if configuration.pauseEvery != nil {
            print("  pauses: \(r.pauses) pass(es) SIGSTOPped while connected to APNs\(r.pauseSeconds.map { String(format: ", %.1f-%.1f s each", $0.lowerBound, $0.upperBound) } ?? "")")
        }
        print("  judged: \(r.doubled) token(s) pushed twice within 30 s (by arrival), \(r.lost) lost")
        print("  trigger phase \(String(format: "%.1f", r.triggerPhaseSeconds)) s, settling \(String(format: "%.1f", r.settleSeconds)) s, total \(String(format: "%.1f", r.seconds)) s")
        print("  passes that moved stored times back to their clock (clock.stored_time_in_future): \(r.clockRepairs)")
        print("  violations: \(r.violations.count)")
        print("  load average (1, 5, 15 min) at the end: \(Self.loadAverage())")
        if !r.violations.isEmpty { throw BenchFailure("\(r.violations.count) invariant violation(s)") }
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// `MIN-MAX` whole seconds, 1 ≤ MIN ≤ MAX ≤ 600.
    static func range(_ text: String) -> ClosedRange<Double>? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let low = Int(parts[0]), let high = Int(parts[1]), 1 <= low, low <= high, high <= 600 else { return nil }
        return Double(low)...Double(high)
    }
}
