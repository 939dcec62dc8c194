import Cryptography
import Foundation
import Relay

/// `send-wakeups`: N silent pushes (by default 1,000, 10,000 and 30,000) from one `job send-wakeups` pass each to a
/// local HTTP/2 APNs stand-in (`APNsBenchStandIn`: nginx answering 200 by default, or the relay tests' Python
/// stand-in that checks every header and JWT), next to `curl --http2 --parallel` pushing the same requests to the
/// same stand-in in the same run. Each client runs `--runs` times (3 by default), in turn; each row gives the median
/// run's wall time and pushes per second, the range of wall times, the ratio to curl's median at the same N, and the
/// child's own highest peak memory (`VmHWM`, `SweepChildProcess`). `--compare-job PATH` adds rows for another build of
/// `job` (an older one, say) on the same stand-in and stores.
enum SendWakeupsBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var pushCounts = [1_000, 10_000, 30_000]
        var parallel = 100
        var kind = APNsBenchStandIn.Kind.nginx
        var compareJob: String?
        var runs = 3
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--pushes":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--pushes needs a list such as 1000,10000,30000") }
                let list = value.split(separator: ",").map { Int($0) }
                guard !list.isEmpty, list.allSatisfy({ $0.map { (1...50_000).contains($0) } ?? false }) else {
                    throw BenchUsageError(message: "--pushes needs a comma-separated list of 1 to 50000 (such as 1000,10000,30000)")
                }
                pushCounts = list.compactMap { $0 }
            case "--curl-parallel": parallel = try BenchOption.integer(&rest, option, in: 1...1000)
            case "--runs": runs = try BenchOption.integer(&rest, option, in: 1...20)
            case "--stand-in":
                guard let value = rest.popFirst(), let chosen = APNsBenchStandIn.Kind(rawValue: value) else {
                    throw BenchUsageError(message: "--stand-in needs nginx or python")
                }
                kind = chosen
            case "--compare-job":
                guard let path = rest.popFirst(), FileManager.default.isExecutableFile(atPath: path) else {
                    throw BenchUsageError(message: "--compare-job needs the path of a job executable")
                }
                compareJob = path
            case "--help", "-h":
                print("usage: job-bench send-wakeups [--pushes 1000,10000,30000] [--stand-in nginx|python] [--curl-parallel N] [--compare-job PATH] [--runs N]")
                print("  --pushes LIST       silent pushes per pass, one token per Device ID (default 1000,10000,30000)")
                print("  --stand-in KIND     nginx answering 200 (default), or the Python stand-in checking every JWT")
                print("  --curl-parallel N   curl --parallel-max for the baseline (default 100)")
                print("  --compare-job PATH  also run this job executable (another build) on the same stand-in")
                print("  --runs N            runs of each client per row, taken in turn; the row gives the median (default 3)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        let directory = try RelayBenchSupport.scratch("send-wakeups")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let key = try P256PrivateKey.generate()
        let keyFile = directory + "/AuthKey.p8"
        try key.pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let (keyID, teamID, topic) = ("BENCHKEY01", "BENCHTEAM1", "eu.vaultsync.app")
        let standIn = try APNsBenchStandIn.start(kind, directory: directory, keyFile: keyFile, keyID: keyID, teamID: teamID, topic: topic)
        defer { standIn.stop() }
        let url = standIn.url
        let now: Int64 = 1_780_000_000_000
        let token = { (i: Int) in String(format: "%08x", i) + String(repeating: "5e", count: 28) }
        let load = ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
        print("send-wakeups: pushes to \(kind == .nginx ? "nginx answering 200 (HTTP/2, TLS, checks nothing)" : "the Python HTTP/2 APNs stand-in (TLS, JWT verified per token)") on loopback")
        print("  \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(load) at start; the pass is the whole `job` process (claim, push, record)")
        let jobs = [("job send-wakeups", job)] + (compareJob.map { [("job send-wakeups (--compare-job)", $0)] } ?? [])

        print("  \("client".padding(toLength: 36, withPad: " ", startingAt: 0)) pushes  200s    conns  seconds  (min–max)      pushes/s  × curl  VmHWM MiB")
        // Baseline: the same requests through curl, multiplexed over HTTP/2 with --parallel.
        let jwt = try JWT.encode(headerJSON: Array("{\"alg\":\"ES256\",\"kid\":\"\(keyID)\"}".utf8),
                                 payloadJSON: Array("{\"iss\":\"\(teamID)\",\"iat\":\(now / 1000)}".utf8)) { try key.signature(for: $0) }
        for pushes in pushCounts {
            let config = directory + "/curl.cfg"
            var lines = ["http2", "silent", "parallel", "parallel-max = \(parallel)", "cacert = \"\(standIn.caFile)\"", "request = \"POST\"",
                         "header = \"authorization: bearer \(jwt)\"", "header = \"apns-push-type: background\"", "header = \"apns-priority: 5\"",
                         "header = \"apns-topic: \(topic)\"", "header = \"apns-expiration: \(now / 1000 + 3600)\"", "header = \"content-type: application/json\"",
                         "data = \"{\\\"aps\\\":{\\\"content-available\\\":1}}\""]
            lines.reserveCapacity(lines.count + 2 * pushes)
            for i in 0..<pushes { lines.append("url = \"\(url)/3/device/\(token(i))\""); lines.append("output = \"/dev/null\"") }
            try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)

            // Every client runs `runs` times, in turn (job, the other build, curl, job, …), so a drift in the machine's
            // load falls on each of them alike.
            let clients = jobs.map(\.0) + ["curl --http2 --parallel-max \(parallel)"]
            var samples = [[Sample]](repeating: [], count: clients.count)
            for _ in 0..<runs {
                for (slot, (name, executable)) in jobs.enumerated() {
                    // The store: one token per Device ID, every Device ID triggered; fresh for every pass.
                    let store = directory + "/store-\(pushes)-\(slot).sqlite"
                    do {
                        let db = try RelayBenchSupport.createStore(store, job: job)
                        try RegistrationSeeder.seed(database: db, storeKey: try RelayBenchSupport.storeKey(store), devices: pushes, tokensPerDevice: 1,
                                                    registeredAt: now - 600_000, triggeredAt: now - 60_000,
                                                    deviceID: { String(format: "bench-device-%08d", $0) }, token: { i, _ in token(i) }, result: { _, _ in .none })
                    }
                    let environment = ["HOME": directory, "PATH": "/usr/bin:/bin", "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID,
                                       "APNS_TOPIC": topic, "APNS_URL": url, "APNS_CA_FILE": standIn.caFile, "JOB_LOG_LEVEL": "warn"]
                    let before = try standIn.received()
                    let pass = try SweepChildProcess.run(executable: executable, arguments: ["--store", store, "--now", "@\(now / 1000)", "--json", "send-wakeups"],
                                                         environment: environment)
                    let counts = RelayBenchSupport.counts(pass.stdout)
                    guard pass.status == 0, counts["delivered"] == pushes else {
                        throw BenchFailure("\(name) did not deliver every push: \(pass.stdout) \(pass.stderr.prefix(500)) \(standIn.errorLogTail())")
                    }
                    let after = try standIn.received()
                    guard after.violations == before.violations else { throw BenchFailure("the stand-in refused \(after.violations - before.violations) of \(name)'s requests") }
                    samples[slot].append(Sample(n: after.count - before.count, ok: after.ok - before.ok, connections: after.connections - before.connections,
                                                seconds: pass.seconds, peakKiB: pass.maxRSSKiB))
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store + suffix) }
                }
                let before = try standIn.received()
                let curl = try SweepChildProcess.run(executable: "/usr/bin/curl", arguments: ["--config", config])
                guard curl.status == 0 else { throw BenchFailure("curl failed (\(curl.status)): \(curl.stderr.prefix(300))") }
                let after = try standIn.received()
                guard after.violations == before.violations else { throw BenchFailure("the stand-in refused \(after.violations - before.violations) of curl's requests") }
                samples[jobs.count].append(Sample(n: after.count - before.count, ok: after.ok - before.ok, connections: after.connections - before.connections,
                                                  seconds: curl.seconds, peakKiB: curl.maxRSSKiB))
            }
            let curlRate = Double(pushes) / Sample.median(samples[jobs.count]).seconds
            for (name, runs) in zip(clients, samples) {
                let median = Sample.median(runs)
                let rate = Double(median.n) / median.seconds
                let range = "(\(RelayBenchSupport.format(runs.map(\.seconds).min()!, 3))–\(RelayBenchSupport.format(runs.map(\.seconds).max()!, 3)))"
                print("  \(pad(name, 36)) \(pad(String(median.n), 7)) \(pad(String(median.ok), 7)) \(pad(String(median.connections), 6)) "
                      + "\(pad(RelayBenchSupport.format(median.seconds, 3), 8)) \(pad(range, 14)) \(pad(RelayBenchSupport.format(rate, 0), 9)) "
                      + "\(pad(RelayBenchSupport.format(rate / curlRate, 2), 7)) \(RelayBenchSupport.format(Double(runs.map(\.peakKiB).max()!) / 1024, 1))")
            }
        }
    }

    /// One run of one client: what the stand-in saw of it, and the child's own wall time and peak memory.
    private struct Sample {
        let n: Int
        let ok: Int
        let connections: Int
        let seconds: Double
        let peakKiB: Int

        /// The run with the median wall time (the lower middle one of an even count).
        static func median(_ runs: [Sample]) -> Sample { runs.sorted { $0.seconds < $1.seconds }[(runs.count - 1) / 2] }
    }

    private static func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
}
