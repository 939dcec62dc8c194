import Chaos
import Foundation

/// `chaos --job relay-multihost`: three `serve-relay` and three `send-wakeups` processes on one PostgreSQL store,
/// triggers over HTTP from concurrent clients, random SIGKILLs throughout and one PostgreSQL crash, judged by the
/// independent model (`MultiHostRelayChaos`). Full size by default: 50,000 Device IDs, 100,000 triggers.
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
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--job": _ = rest.popFirst()
            case "--devices": configuration.devices = try BenchOption.integer(&rest, option, in: 10...1_000_000)
            case "--triggers": configuration.triggers = try BenchOption.integer(&rest, option, in: 10...10_000_000)
            case "--seconds": configuration.triggerSeconds = Double(try BenchOption.integer(&rest, option, in: 1...3600))
            case "--clients": configuration.clients = try BenchOption.integer(&rest, option, in: 1...256)
            case "--seed": configuration.seed = try BenchOption.seed(&rest)
            case "--help", "-h":
                print("usage: job-bench chaos --job relay-multihost [--devices N] [--triggers N] [--seconds S] [--clients N] [--seed S]")
                print("  --devices N   provisioned Device IDs that get triggers (default 50000; a tenth more are never triggered)")
                print("  --triggers N  triggers spread over them (default 100000; at most 10 a Device ID, the rate limit)")
                print("  --seconds S   planned length of the trigger phase (default 60)")
                print("  --clients N   concurrent HTTP clients (default 32)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        guard configuration.triggers <= configuration.devices * 10 else { throw BenchUsageError(message: "--triggers may be at most 10 per Device ID (the rate limit)") }
        configuration.idleDevices = max(1, configuration.devices / 10)
        let job = try RelayBenchSupport.jobExecutable()
        let directory = try RelayBenchSupport.scratch("chaos-relay-multihost")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        print("chaos relay-multihost: 3 serve-relay + 3 send-wakeups on one PostgreSQL, \(configuration.devices) Device IDs, \(configuration.triggers) triggers…")
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
        print("  trigger phase \(String(format: "%.1f", r.triggerPhaseSeconds)) s, settling \(String(format: "%.1f", r.settleSeconds)) s, total \(String(format: "%.1f", r.seconds)) s")
        print("  passes that moved stored times back to their clock (clock.stored_time_in_future): \(r.clockRepairs)")
        print("  violations: \(r.violations.count)")
        if !r.violations.isEmpty { throw BenchFailure("\(r.violations.count) invariant violation(s)") }
    }
}
