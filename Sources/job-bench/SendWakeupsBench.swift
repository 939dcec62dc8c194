import Cryptography
import Foundation
import Relay

/// `send-wakeups`: N silent pushes (default 10,000) from one `job send-wakeups` pass to the local HTTP/2
/// APNs stand-in (`Tests/Peers/apns_standin.py`, which checks every header and the JWT
/// signature), next to `curl --http2 --parallel` pushing the same requests to the same stand-in in the same run.
enum SendWakeupsBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var pushes = 10_000
        var parallel = 100
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--pushes":
                guard let value = rest.popFirst(), let n = Int(value), n >= 1 else { throw BenchUsageError(message: "--pushes needs a positive number") }
                pushes = n
            case "--curl-parallel":
                guard let value = rest.popFirst(), let n = Int(value), n >= 1 else { throw BenchUsageError(message: "--curl-parallel needs a positive number") }
                parallel = n
            case "--help", "-h":
                print("usage: job-bench send-wakeups [--pushes N] [--curl-parallel N]")
                print("  --pushes N         silent pushes in the pass (default 10000), one token per Device ID")
                print("  --curl-parallel N  curl --parallel-max for the baseline (default 100)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        let directory = try RelayBenchSupport.scratch("send-wakeups")
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The stand-in, with a fresh provider key it verifies every JWT against.
        let key = try P256PrivateKey.generate()
        let keyFile = directory + "/AuthKey.p8"
        try key.pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let (keyID, teamID, topic) = ("BENCHKEY01", "BENCHTEAM1", "eu.vaultsync.app")
        let script: [String: Any] = ["p8": keyFile, "key_id": keyID, "team_id": teamID, "topic": topic, "answers": [String: Any](), "default": ["status": 200]]
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: directory + "/script.json"))
        let log = directory + "/log.jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let standIn = Process()
        standIn.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        standIn.arguments = ["-u", RelayBenchSupport.peersDirectory + "/apns_standin.py", "--script", directory + "/script.json", "--log", log, "--cert-dir", directory]
        let portFile = directory + "/port.txt"
        _ = FileManager.default.createFile(atPath: portFile, contents: nil)
        standIn.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        standIn.standardError = FileHandle.standardError
        try standIn.run()
        defer { if standIn.isRunning { kill(standIn.processIdentifier, SIGKILL); standIn.waitUntilExit() } }
        var port: Int?
        let deadline = Date().addingTimeInterval(15)
        while port == nil && Date() < deadline {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            port = text.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) }
            if port == nil { usleep(50_000) }
        }
        guard let port else { throw BenchFailure("the APNs stand-in did not start (needs /usr/bin/python3 with python3-h2 and python3-cryptography)") }
        let url = "https://127.0.0.1:\(port)"

        // The store: one token per Device ID, every Device ID triggered.
        let store = directory + "/store.sqlite"
        let now: Int64 = 1_780_000_000_000
        let token = { (i: Int) in String(format: "%08x", i) + String(repeating: "5e", count: 28) }
        do {
            let db = try RelayBenchSupport.createStore(store, job: job)
            try RegistrationSeeder.seed(database: db, storeKey: try RelayBenchSupport.storeKey(store), devices: pushes, tokensPerDevice: 1,
                                        registeredAt: now - 600_000, triggeredAt: now - 60_000,
                                        deviceID: { String(format: "bench-device-%08d", $0) }, token: { i, _ in token(i) }, result: { _, _ in .none })
        }
        print("send-wakeups: \(pushes) pushes to the local HTTP/2 APNs stand-in (TLS, JWT verified per token)")

        let environment = ["HOME": directory, "PATH": "/usr/bin:/bin", "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID,
                           "APNS_TOPIC": topic, "APNS_URL": url, "APNS_CA_FILE": directory + "/ca.pem"]
        let pass = try RelayBenchSupport.run(job, ["--store", store, "--now", "@\(now / 1000)", "--json", "send-wakeups"], environment: environment)
        let counts = RelayBenchSupport.counts(pass.stdout)
        guard pass.status == 0, counts["delivered"] == pushes else { throw BenchFailure("send-wakeups did not deliver every push: \(pass.stdout) \(pass.stderr)") }
        let ours = try received(log)

        // Baseline: the same requests through curl, multiplexed over HTTP/2 with --parallel.
        let jwt = try JWT.encode(headerJSON: Array("{\"alg\":\"ES256\",\"kid\":\"\(keyID)\"}".utf8),
                                 payloadJSON: Array("{\"iss\":\"\(teamID)\",\"iat\":\(now / 1000)}".utf8)) { try key.signature(for: $0) }
        let config = directory + "/curl.cfg"
        var lines = ["http2", "silent", "parallel", "parallel-max = \(parallel)", "cacert = \"\(directory)/ca.pem\"", "request = \"POST\"",
                     "header = \"authorization: bearer \(jwt)\"", "header = \"apns-push-type: background\"", "header = \"apns-priority: 5\"",
                     "header = \"apns-topic: \(topic)\"", "header = \"apns-expiration: \(now / 1000 + 3600)\"", "header = \"content-type: application/json\"",
                     "data = \"{\\\"aps\\\":{\\\"content-available\\\":1}}\""]
        lines.reserveCapacity(lines.count + 2 * pushes)
        for i in 0..<pushes { lines.append("url = \"\(url)/3/device/\(token(i))\""); lines.append("output = \"/dev/null\"") }
        try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
        let curl = try RelayBenchSupport.run("/usr/bin/curl", ["--config", config])
        guard curl.status == 0 else { throw BenchFailure("curl failed (\(curl.status)): \(curl.stderr.prefix(300))") }
        let all = try received(log)
        let baseline = (count: all.count - ours.count, ok: all.ok - ours.ok, violations: all.violations - ours.violations, connections: all.connections - ours.connections)

        guard ours.violations == 0, baseline.violations == 0 else { throw BenchFailure("the stand-in refused requests: job \(ours.violations), curl \(baseline.violations)") }
        print("  \("client".padding(toLength: 40, withPad: " ", startingAt: 0)) pushes  200s    connections  seconds  pushes/s")
        func row(_ name: String, _ n: Int, _ ok: Int, _ connections: Int, _ seconds: Double) {
            print("  \(name.padding(toLength: 40, withPad: " ", startingAt: 0)) \(String(n).padding(toLength: 7, withPad: " ", startingAt: 0)) \(String(ok).padding(toLength: 7, withPad: " ", startingAt: 0)) \(String(connections).padding(toLength: 12, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(seconds, 3).padding(toLength: 8, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(Double(n) / seconds, 0))")
        }
        row("job send-wakeups (whole process)", ours.count, ours.ok, ours.connections, pass.seconds)
        row("curl --http2 --parallel-max \(parallel)", baseline.count, baseline.ok, baseline.connections, curl.seconds)
    }

    /// What the stand-in logged: requests, 200s, refused checks, distinct connections.
    private static func received(_ log: String) throws -> (count: Int, ok: Int, violations: Int, connections: Int) {
        var count = 0, ok = 0, violations = 0
        var connections = Set<Int>()
        for line in try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            count += 1
            if object["status"] as? Int == 200 { ok += 1 }
            if !(object["violation"] is NSNull) { violations += 1 }
            if let connection = object["conn"] as? Int { connections.insert(connection) }
        }
        return (count, ok, violations, connections.count)
    }
}
