import Foundation
import Store
import Synchronization

/// Contention: eight passes of one job started over and over on one store while a writer process plays the
/// app (registering APNs tokens, recording triggers, issuing grants: `job relay register`, `job relay trigger`,
/// `job grants issue`, one after another), for a given time.
///
/// Checked afterwards: no pass and no writer command failed (in particular none reported the store busy —
/// `store-busy`, exit 75), every pass that did not work was skipped because another held the lease, the
/// ledger's working passes of the job never overlap in time, and the writer's slowest command stayed under
/// the store's busy timeout.
package struct Contention: Sendable {
    package let process: ChaosProcess
    package let store: String
    /// The pass arguments (without `--store`), e.g. `["--json", "clean-tokens"]`; `now` is the pass clock.
    package let passArguments: @Sendable (_ now: Int64) -> [String]
    package let job: String
    package let parallel: Int
    package let seconds: Double
    /// The store's busy timeout (Store's default).
    package static let busyTimeoutMilliseconds = 10_000

    package init(process: ChaosProcess, store: String, job: String, parallel: Int = 8, seconds: Double, passArguments: @escaping @Sendable (_ now: Int64) -> [String]) {
        self.process = process
        self.store = store
        self.job = job
        self.parallel = parallel
        self.seconds = seconds
        self.passArguments = passArguments
    }

    package struct Report: Sendable {
        package var job = ""
        package var seconds = 0.0
        package var passes = 0
        package var worked = 0
        package var skippedLeaseHeld = 0
        package var failedPasses = 0
        package var busyReports = 0
        package var ledgerOverlaps = 0
        package var writerCommands = 0
        package var writerFailures = 0
        package var writerMaxMilliseconds = 0.0
        package var writerP99Milliseconds = 0.0
        package var writerMedianMilliseconds = 0.0
        package var failures: [String] = []

        /// True when every contention rule held.
        package var holds: Bool {
            failedPasses == 0 && busyReports == 0 && ledgerOverlaps == 0 && writerFailures == 0
                && writerMaxMilliseconds < Double(Contention.busyTimeoutMilliseconds) && worked > 0 && writerCommands > 0
        }
    }

    /// A Syncthing-shaped Device ID (8 groups of 7 base32 letters) for writer step `n`.
    package static func deviceID(_ n: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var x = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ 0xABCDEF
        var chars: [Character] = []
        for _ in 0..<56 { chars.append(alphabet[Int(x & 31)]); x = (x >> 5) | (x << 59); x = x &* 0x100_0000_01b3 &+ UInt64(n) }
        return stride(from: 0, to: 56, by: 7).map { String(chars[$0..<$0 + 7]) }.joined(separator: "-")
    }

    package func run(startNow: Int64) throws -> Report {
        // The node identity `grants issue` signs with, created before the clock starts.
        let node = try process.run(["--store", store, "node", "show"])
        guard node.exitCode == 0 else { throw ChaosFailure("job node show failed: \(node.stderr)") }
        let shared = Shared()
        let deadline = Date().addingTimeInterval(seconds)
        let group = DispatchGroup()
        let note: @Sendable (String) -> Void = { shared.note($0) }

        for slot in 0..<parallel {
            group.enter()
            Thread {
                var k = 0
                while Date() < deadline {
                    k += 1
                    // The pass clock advances with real time, so time-based jobs keep finding work.
                    let now = startNow + Int64(Date().timeIntervalSince(deadline.addingTimeInterval(-seconds)) * 1000)
                    guard let outcome = try? process.run(["--store", store] + passArguments(now), timeout: 120) else { note("slot \(slot): spawn failed"); continue }
                    let skipped = outcome.stdout.contains("\"outcome\":\"skipped\"")
                    shared.tallies.withLock { tallies in
                        tallies.report.passes += 1
                        if outcome.exitCode != 0 { tallies.report.failedPasses += 1 }
                        if outcome.stderr.contains("busy") || outcome.stdout.contains("store-busy") { tallies.report.busyReports += 1 }
                        if skipped { tallies.report.skippedLeaseHeld += outcome.stdout.contains("lease-held") ? 1 : 0 } else if outcome.exitCode == 0 { tallies.report.worked += 1 }
                    }
                    if outcome.exitCode != 0 { note("slot \(slot) pass \(k): exit \(outcome.exitCode.map(String.init) ?? "signal"): \(outcome.stderr.prefix(200))") }
                    if skipped && !outcome.stdout.contains("lease-held") { note("slot \(slot) pass \(k): skipped for another reason: \(outcome.stdout.prefix(200))") }
                }
                group.leave()
            }.start()
        }

        group.enter()
        Thread {
            var n = 0
            while Date() < deadline {
                n += 1
                let now = startNow + Int64(Date().timeIntervalSince(deadline.addingTimeInterval(-seconds)) * 1000)
                let device = Self.deviceID(1_000_000 + n)
                let token = String(format: "%016llx", UInt64(n)) + String(repeating: "a7", count: 24)
                let holder = String(format: "%016llx", UInt64(n) &* 0x9E37_79B9_7F4A_7C15) + String(repeating: "3d", count: 24)
                for command in [["relay", "register", "--device-id", device, "--apns-token", token],
                                ["relay", "trigger", "--device-id", device],
                                ["grants", "issue", "--to", holder]] {
                    guard let outcome = try? process.run(["--store", store, "--now", "@\(now / 1000)"] + command, timeout: 60) else { note("writer: spawn failed"); continue }
                    shared.tallies.withLock { tallies in
                        tallies.report.writerCommands += 1
                        tallies.writerTimes.append(outcome.seconds * 1000)
                        if outcome.exitCode != 0 { tallies.report.writerFailures += 1 }
                        if outcome.stderr.contains("busy") { tallies.report.busyReports += 1 }
                    }
                    if outcome.exitCode != 0 { note("writer \(command[1]): exit \(outcome.exitCode.map(String.init) ?? "signal"): \(outcome.stderr.prefix(200))") }
                }
            }
            group.leave()
        }.start()
        group.wait()
        let tallies = shared.tallies.withLock { $0 }
        var report = tallies.report
        report.job = job
        report.seconds = seconds
        let writerTimes = tallies.writerTimes.sorted()
        if !writerTimes.isEmpty {
            report.writerMaxMilliseconds = writerTimes.last!
            report.writerMedianMilliseconds = writerTimes[writerTimes.count / 2]
            report.writerP99Milliseconds = writerTimes[min(writerTimes.count - 1, writerTimes.count * 99 / 100)]
        }
        report.ledgerOverlaps = try Self.overlaps(store: store, job: job)
        return report
    }

    /// The tallies the pass and writer threads share.
    private final class Shared: Sendable {
        struct Tallies { var report = Report(); var writerTimes: [Double] = [] }
        let tallies = Mutex(Tallies())
        func note(_ text: String) {
            tallies.withLock { if $0.report.failures.count < 20 { $0.report.failures.append(text) } }
        }
    }

    /// Working passes of `job` in the ledger whose span overlaps the previous one's.
    package static func overlaps(store: String, job: String) throws -> Int {
        let db = try Database(path: store)
        var overlaps = 0
        var lastFinish: Int64 = .min
        try db.forEachRow("""
            SELECT started_at, coalesce(finished_at, 9223372036854775807) FROM job_runs
            WHERE job = ? AND outcome <> 'skipped' ORDER BY started_at, id
            """, [job]) { row in
            let start = try row.get(0, as: Int64.self), finish = try row.get(1, as: Int64.self)
            if start < lastFinish { overlaps += 1 }
            lastFinish = max(lastFinish, finish)
        }
        return overlaps
    }
}
