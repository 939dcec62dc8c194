import Chaos
import Cryptography
import Foundation
import HTTPClient
import Relay
import Runner
import Store

/// `relay-api`: triggers per second and p99 latency from concurrent keep-alive clients (curl, one process per
/// client) through nginx (the shipped `jobs/nginx-relay.conf`, TLS) to `job serve-relay`, next to the same
/// nginx serving a static file to the same clients in the same run (the ratio is reported); then trigger-to-push
/// latency: a trigger to a pushing serve-relay until the local HTTP/2 APNs stand-in logs the push.
///
/// The stores are on a real disk (`DiskScratch`: the filesystem is printed, tmpfs refused) whose flushes per
/// second are measured first; every trigger names a distinct Device ID unless `--triggers-per-device` says
/// otherwise; the load runs once with every write committed alone (`--max-batch 1`) and once with group commit,
/// and each run's commits per trigger come from the writer's own count (`relay-api.stopped … writes= commits=`).
/// Then authenticated (v2) triggers next to v1 on one more group-commit serve-relay (`TriggerV2Load`), with the
/// serve-relay CPU a forged request costs when it fails the cheap checks and when it fails the signature check.
/// Every client connects from 127.0.0.1, so that serve-relay gets the highest signature budget it takes
/// (`RELAY_SIGNATURE_CHECKS_PER_MINUTE`, `SignatureBudget.maxPerMinute`); the default 120 per client address would
/// answer 429 to the rest.
///
/// `--store postgres`: the trigger load against a throwaway durable PostgreSQL cluster (`fsync = on`) instead, once
/// with a transaction per request on the pool (`--max-batch 1`) and once batched, each with the server's own counts
/// of transactions committed and WAL flushes per trigger (`pg_stat_database`, `pg_stat_wal`); the v2 and push parts
/// are left out.
enum RelayAPIBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var clients = 64, requests = 200, samples = 20, threads = 4, perDevice = 1
        var storeDir: String?
        var postgres = false
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--clients": clients = try BenchOption.integer(&rest, option, in: 1...512)
            case "--requests": requests = try BenchOption.integer(&rest, option, in: 1...100_000)
            case "--latency-samples": samples = try BenchOption.integer(&rest, option, in: 1...1000)
            case "--threads": threads = try BenchOption.integer(&rest, option, in: 1...256)
            case "--triggers-per-device": perDevice = try BenchOption.integer(&rest, option, in: 1...10)
            case "--store":
                switch rest.popFirst() {
                case "sqlite": postgres = false
                case "postgres", "postgresql": postgres = true
                default: throw BenchUsageError(message: "--store needs sqlite or postgres")
                }
            case "--store-dir":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--store-dir needs a folder") }
                storeDir = value
            case "--help", "-h":
                print("usage: job-bench relay-api [--clients N] [--requests N] [--latency-samples N] [--threads N] [--triggers-per-device N] [--store sqlite|postgres] [--store-dir DIR]")
                print("  --clients N              concurrent keep-alive clients (default 64)")
                print("  --requests N             requests per client (default 200)")
                print("  --latency-samples N      triggers timed to the APNs stand-in (default 20)")
                print("  --threads N              serve-relay worker threads (default 4)")
                print("  --triggers-per-device N  triggers each Device ID gets (default 1: every trigger a distinct Device ID; at most 10, the rate limit)")
                print("  --store sqlite|postgres  the store serve-relay writes (default sqlite); postgres: a throwaway durable cluster (fsync on),")
                print("                           the load once with a transaction per request on the pool (--max-batch 1) and once batched;")
                print("                           the v2 and trigger → push parts run with sqlite only")
                print("  --store-dir DIR          where the stores go (default $TMPDIR or /tmp, else .build/; never a memory filesystem)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else { throw BenchFailure("needs Debian's nginx (/usr/sbin/nginx)") }
        let job = try RelayBenchSupport.jobExecutable()
        let scratch = try DiskScratch.make("relay-api", base: storeDir)
        let directory = scratch.path
        defer { scratch.remove() }
        var children: [Process] = []
        defer { for child in children where child.isRunning { kill(child.processIdentifier, SIGTERM); child.waitUntilExit() } }

        let flushes = try scratch.flushesPerSecond()
        print("relay-api: stores in \(directory) (\(scratch.filesystem)); this disk: \(RelayBenchSupport.format(flushes, 0)) write+fdatasync/s")
        // Operator-provisioned Device IDs, each triggered `perDevice` times (under the 10-a-minute limit).
        let total = clients * requests
        let devices = (total + perDevice - 1) / perDevice
        let environment = ["HOME": directory, "PATH": "/usr/bin:/bin", "STOREKIT_BUNDLE_ID": "eu.vaultsync.app", "STOREKIT_PRODUCT_IDS": "relay"]
        print("  \(clients) keep-alive clients × \(requests) requests through nginx (TLS) → serve-relay (\(threads) threads), on loopback; "
              + "\(devices) Device IDs, \(perDevice) trigger(s) each")

        // PostgreSQL: a throwaway cluster that flushes its WAL (fsync on), its data folder on a disk.
        var cluster: PostgresCluster?
        defer { cluster?.stop() }
        var serverEnvironment = environment
        if postgres {
            let (started, kind) = try RelayBenchSupport.startPostgres(in: directory, settings: ["max_connections": "100"], durable: true)
            cluster = started
            let keyFile = directory + "/store.key"
            var generator = SystemRandomNumberGenerator()
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined() + "\n"
            guard FileManager.default.createFile(atPath: keyFile, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw BenchFailure("cannot write the store key")
            }
            serverEnvironment["JOB_STORE_KEY_FILE"] = keyFile
            print("  PostgreSQL \(started.binDirectory) (fsync on, synchronous_commit on), data in \(started.directory) (\(kind)), over its Unix socket")
        }

        // The same load twice over fresh stores: each write committed alone (--max-batch 1), then group commit.
        var rows: [(String, LoadResult)] = []
        var commitRows: [(String, Int, Int, Double)] = []
        var postgresRows: [(String, Int, Int, Double)] = []
        var nginxPorts: (Int, Int)?
        var nginx: Process?
        for (label, batch) in [("one commit per trigger", 1), ("group commit (default)", 256)] {
            let store: String
            if let cluster {
                store = try cluster.createDatabase("relay_batch_\(batch)").conninfo
                let migrate = try RelayBenchSupport.run(job, ["--store", store, "migrate"], environment: serverEnvironment)
                guard migrate.status == 0 else { throw BenchFailure("job migrate on PostgreSQL failed: \(migrate.stderr)") }
                try seed(try Database(path: store), key: try StoreKeyLocation.resolve(environment: serverEnvironment, storePath: store).load(), devices: devices)
            } else {
                store = directory + "/relay-\(batch).sqlite"
                try seed(store, job: job, devices: devices)
            }
            let (server, serverPort, serverLog) = try startServer(job, store: store, options: ["--no-push", "--threads", String(threads), "--max-batch", String(batch)],
                                                                  environment: serverEnvironment, directory: directory)
            children.append(server)
            if let old = nginx { kill(old.processIdentifier, SIGTERM); old.waitUntilExit() }
            let (proxy, nginxPort, staticPort) = try startNginx(directory: directory, upstreamPort: serverPort)
            children.append(proxy)
            nginx = proxy
            nginxPorts = (nginxPort, staticPort)
            let before = try cluster.map { try postgresCounts($0, database: "relay_batch_\(batch)") }
            var next = 0
            let trigger = try load(directory: directory, label: "trigger-\(batch)", clients: clients, requests: requests) { _ in
                defer { next += 1 }
                return (url: "https://127.0.0.1:\(nginxPort)/api/v1/trigger", body: "{\\\"device_id\\\":\\\"\(deviceID(next % devices))\\\"}")
            }
            guard trigger.codes[202, default: 0] == total else { throw BenchFailure("not every trigger was accepted: \(trigger.codes)") }
            kill(server.processIdentifier, SIGTERM)
            server.waitUntilExit()
            let log = (try? String(contentsOfFile: serverLog, encoding: .utf8)) ?? ""
            func field(_ name: String) -> Int? {
                log.split(separator: "\n").last { $0.contains("event=relay-api.stopped") }?.split(separator: " ")
                    .first { $0.hasPrefix(name + "=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
            }
            rows.append(("POST trigger, \(label)", trigger))
            let rate = Double(trigger.count) / trigger.seconds
            if let cluster, let before {
                // The server's own counts, read once serve-relay's sessions ended (each reports its counts as it exits).
                usleep(500_000)
                let after = try postgresCounts(cluster, database: "relay_batch_\(batch)")
                postgresRows.append((label, after.commits - before.commits, after.walSyncs - before.walSyncs, rate))
                if let writes = field("writes"), let commits = field("commits"), writes > 0 { commitRows.append((label, writes, commits, rate)) }
            } else {
                guard let writes = field("writes"), let commits = field("commits"), writes > 0 else { throw BenchFailure("serve-relay logged no writes/commits at stop") }
                commitRows.append((label, writes, commits, rate))
            }
        }
        guard let (_, staticPort) = nginxPorts else { throw BenchFailure("nginx did not start") }
        let staticFile = try load(directory: directory, label: "static", clients: clients, requests: requests) { _ in
            (url: "https://127.0.0.1:\(staticPort)/api/v1/health", body: nil)
        }
        rows.append(("GET static file (nginx)", staticFile))
        print("  \("through nginx".padding(toLength: 42, withPad: " ", startingAt: 0)) requests  answers        seconds  requests/s  p50 ms  p99 ms")
        for (name, result) in rows {
            let answers = result.codes.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
            print("  \(name.padding(toLength: 42, withPad: " ", startingAt: 0)) \(String(result.count).padding(toLength: 9, withPad: " ", startingAt: 0)) \(answers.padding(toLength: 14, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(result.seconds, 2).padding(toLength: 8, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(Double(result.count) / result.seconds, 0).padding(toLength: 11, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(result.p50 * 1000, 2).padding(toLength: 7, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(result.p99 * 1000, 2))")
        }
        let staticRate = Double(staticFile.count) / staticFile.seconds
        for (label, writes, commits, rate) in commitRows {
            print("  \(label): \(writes) writes in \(commits) commits = \(RelayBenchSupport.format(Double(commits) / Double(writes), 3)) commits (fdatasyncs of the WAL) per trigger; "
                  + "ratio relay/static \(RelayBenchSupport.format(rate / staticRate, 3)); triggers/s per disk flush/s \(RelayBenchSupport.format(rate / flushes, 2))")
        }
        for (label, commits, syncs, rate) in postgresRows {
            print("  \(label): \(RelayBenchSupport.format(Double(commits) / Double(total), 3)) transactions committed and "
                  + "\(RelayBenchSupport.format(Double(syncs) / Double(total), 3)) WAL flushes per trigger (pg_stat_database xact_commit, pg_stat_wal wal_sync); "
                  + "\(RelayBenchSupport.format(rate, 0)) triggers/s")
        }
        if let nginx { kill(nginx.processIdentifier, SIGTERM); nginx.waitUntilExit() }
        if postgres {
            print("  (the v2 and trigger → push parts run with --store sqlite)")
            return
        }
        try authenticatedTriggers(job: job, directory: directory, environment: environment, clients: clients, requests: requests,
                                  threads: threads, children: &children)

        // Trigger → push: a pushing serve-relay over a fresh store, the APNs stand-in, one trigger at a time.
        let (standIn, apnsEnvironment) = try startStandIn(directory: directory)
        children.append(standIn)
        let pushStore = directory + "/push.sqlite"
        try seed(pushStore, job: job, devices: samples)
        let (pushServer, pushPort, _) = try startServer(job, store: pushStore, options: [], environment: environment.merging(apnsEnvironment) { $1 },
                                                     directory: directory)
        children.append(pushServer)
        let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 5, totalTimeout: 10, httpVersion: .http1_1))
        var latencies: [Double] = []
        for i in 0..<samples {
            let before = try lines(directory + "/apns.jsonl")
            let start = DispatchTime.now()
            let answer = try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(pushPort)/api/v1/trigger", headers: [("Content-Type", "application/json")],
                                                     body: Array("{\"device_id\":\"\(deviceID(i))\"}".utf8)))
            guard answer.status == 202 else { throw BenchFailure("trigger answered \(answer.status)") }
            let deadline = Date().addingTimeInterval(10)
            while try lines(directory + "/apns.jsonl") == before {
                guard Date() < deadline else { throw BenchFailure("no push reached the APNs stand-in within 10 s") }
                usleep(1_000)
            }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
            usleep(200_000)
        }
        latencies.sort()
        print("  trigger → APNs stand-in (serve-relay starts send-wakeups, \(samples) samples): median \(RelayBenchSupport.format(latencies[latencies.count / 2] * 1000, 0)) ms, "
              + "p90 \(RelayBenchSupport.format(latencies[min(latencies.count - 1, latencies.count * 9 / 10)] * 1000, 0)) ms, max \(RelayBenchSupport.format(latencies.last! * 1000, 0)) ms")
    }

    /// A valid Syncthing Device ID for `n` (base32, eight dashed groups of seven).
    static func deviceID(_ n: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var x = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ 777
        var chars: [Character] = []
        for _ in 0..<56 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            chars.append(alphabet[Int(x >> 59)])
        }
        return stride(from: 0, to: 56, by: 7).map { String(chars[$0..<$0 + 7]) }.joined(separator: "-")
    }

    /// v2 next to v1 through nginx on one group-commit serve-relay: the same clients and requests each, v1 over
    /// Device IDs of its own and v2 over Device IDs derived from one P-384 key (5 signed requests each, signed up
    /// front); then, straight to serve-relay, its CPU per forged request that fails the timestamp (before the store),
    /// the cheap store checks (an unregistered Device ID) or the signature (a registered one, a bad signature).
    private static func authenticatedTriggers(job: String, directory: String, environment: [String: String], clients: Int, requests: Int,
                                              threads: Int, children: inout [Process]) throws {
        let total = clients * requests
        let forgeries = min(2_000, total)
        // One client address for every load client (all connect from 127.0.0.1), so one bucket for the whole part.
        let budget = SignatureBudget.maxPerMinute
        guard total + forgeries <= budget else {
            print("  v1 and v2 triggers: left out, \(total) v2 requests and \(forgeries) forged ones are more signature checks than one client address may make in a minute (\(budget))")
            return
        }
        let v1Devices = total
        let v2Key = try TriggerV2Load.key()
        let v2Devices = (total + 4) / 5 + forgeries / 5 + 1
        let v2Certificates = try (0..<v2Devices).map { try TriggerV2Load.certificate(v2Key.certificateDER, $0) }
        let v2IDs = v2Certificates.map { DeviceIDEncoding.of(certificateDER: $0) }
        let store = directory + "/relay-v2.sqlite"
        try seed(store, job: job, devices: v1Devices + v2Devices) { $0 < v1Devices ? deviceID($0) : v2IDs[$0 - v1Devices] }
        let (server, serverPort, _) = try startServer(job, store: store, options: ["--no-push", "--threads", String(threads)],
                                                      environment: environment.merging(["RELAY_SIGNATURE_CHECKS_PER_MINUTE": String(budget)]) { $1 },
                                                      directory: directory)
        children.append(server)
        let (nginx, nginxPort, _) = try startNginx(directory: directory, upstreamPort: serverPort)
        children.append(nginx)
        defer { kill(nginx.processIdentifier, SIGTERM); nginx.waitUntilExit() }

        let v1 = try load(directory: directory, label: "trigger-v1", clients: clients, requests: requests) { i in
            (url: "https://127.0.0.1:\(nginxPort)/api/v1/trigger", body: "{\\\"device_id\\\":\\\"\(deviceID(i))\\\"}")
        }
        guard v1.codes[202, default: 0] == total else { throw BenchFailure("not every v1 trigger was accepted: \(v1.codes)") }
        let signStart = DispatchTime.now()
        let ts = Int64(Date().timeIntervalSince1970)
        let v2Bodies = try (0..<total).map { try TriggerV2Load.body(key: v2Key, cert: v2Certificates[$0 / 5], ts: ts) }
        let signSeconds = Double(DispatchTime.now().uptimeNanoseconds - signStart.uptimeNanoseconds) / 1e9
        let v2 = try load(directory: directory, label: "trigger-v2", clients: clients, requests: requests) { i in
            (url: "https://127.0.0.1:\(nginxPort)/api/v2/trigger", body: v2Bodies[i])
        }
        guard v2.codes[202, default: 0] == total else { throw BenchFailure("not every v2 trigger was accepted: \(v2.codes)") }
        let v1Rate = Double(v1.count) / v1.seconds, v2Rate = Double(v2.count) / v2.seconds
        print("  v1 and v2 triggers through nginx, group commit, \(total) requests each:")
        print("    POST /api/v1/trigger  \(RelayBenchSupport.format(v1Rate, 0)) requests/s, p50 \(RelayBenchSupport.format(v1.p50 * 1000, 2)) ms, p99 \(RelayBenchSupport.format(v1.p99 * 1000, 2)) ms")
        print("    POST /api/v2/trigger  \(RelayBenchSupport.format(v2Rate, 0)) requests/s, p50 \(RelayBenchSupport.format(v2.p50 * 1000, 2)) ms, p99 \(RelayBenchSupport.format(v2.p99 * 1000, 2)) ms "
              + "(signed beforehand in \(RelayBenchSupport.format(signSeconds, 1)) s)")
        print("    ratio v2/v1: \(RelayBenchSupport.format(v2Rate / v1Rate, 3)) (goal ≥ 0.8)")
        print("    P-384 check in this process (SHA-256, strict parse, verify): median \(RelayBenchSupport.format(try TriggerV2Load.verifySeconds(key: v2Key) * 1000, 3)) ms")

        let direct = "http://127.0.0.1:\(serverPort)/api/v2/trigger"
        let unregistered = try (0..<forgeries).map { try TriggerV2Load.certificate(v2Key.certificateDER, 1_000_000 + $0) }
        let perClient = max(1, forgeries / clients)
        let firstForgeryDevice = (total + 4) / 5
        let batches: [(String, (Int) -> String)] = [
            ("stale timestamp (401 timestamp-out-of-window)", { i in (try? TriggerV2Load.body(key: v2Key, cert: unregistered[i], ts: ts - 600)) ?? "" }),
            ("unregistered Device ID (403, store checked)", { i in (try? TriggerV2Load.body(key: v2Key, cert: unregistered[i], ts: ts)) ?? "" }),
            ("bad signature (401, P-384 verified)", { i in (try? TriggerV2Load.body(key: v2Key, cert: v2Certificates[firstForgeryDevice + i / 5], ts: ts, forge: true)) ?? "" }),
        ]
        print("    serve-relay CPU per forged v2 request (\(clients * perClient) requests each, direct):")
        for (name, make) in batches {
            let bodies = (0..<(clients * perClient)).map(make)
            let before = TriggerV2Load.cpuSeconds(server.processIdentifier)
            let result = try load(directory: directory, label: "forged", clients: clients, requests: perClient) { i in (url: direct, body: bodies[i]) }
            let cpu = TriggerV2Load.cpuSeconds(server.processIdentifier) - before
            let answers = result.codes.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
            print("      \(name.padding(toLength: 46, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(cpu / Double(max(result.count, 1)) * 1e6, 0)) µs CPU each (\(answers))")
        }
        kill(server.processIdentifier, SIGTERM)
        server.waitUntilExit()
    }

    /// Transactions committed in `database` and WAL flushes of the whole cluster so far, as the server counts them.
    private static func postgresCounts(_ cluster: PostgresCluster, database: String) throws -> (commits: Int, walSyncs: Int) {
        let text = try cluster.execute("SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = '\(database)') || ' ' || (SELECT wal_sync FROM pg_stat_wal)")
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
        guard fields.count == 2 else { throw BenchFailure("pg_stat_database / pg_stat_wal gave \(text)") }
        return (fields[0], fields[1])
    }

    private static func seed(_ store: String, job: String, devices: Int, deviceID: (Int) -> String = deviceID) throws {
        try seed(try RelayBenchSupport.createStore(store, job: job), key: try RelayBenchSupport.storeKey(store), devices: devices, deviceID: deviceID)
    }

    private static func seed(_ db: Database, key: Cryptography.SecretBytes, devices: Int, deviceID: (Int) -> String = deviceID) throws {
        try RegistrationSeeder.seed(database: db, storeKey: key, devices: devices, tokensPerDevice: 1,
                                    registeredAt: 1_780_000_000_000, triggeredAt: nil, deviceID: deviceID,
                                    token: { i, _ in String(format: "%08x", i) + String(repeating: "ab", count: 28) }, result: { _, _ in .none })
        // Operator-provisioned, as `job relay register` makes them.
        try db.write { db in try db.execute("INSERT INTO relay_entitlements (device_id, kind, verified_at) SELECT id, 'operator', created_at FROM relay_devices") }
    }

    private static func startServer(_ job: String, store: String, options: [String], environment: [String: String], directory: String) throws -> (Process, Int, String) {
        let out = directory + "/serve-\(UUID().uuidString.prefix(6)).out"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: out + ".err", contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: job)
        process.arguments = ["--store", store, "serve-relay", "--listen", "127.0.0.1:0"] + options
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: out + ".err"))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline && process.isRunning {
            if let line = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
               let port = Int(line.split(separator: ":").last ?? "") { return (process, port, out + ".err") }
            usleep(20_000)
        }
        throw BenchFailure("serve-relay did not start")
    }


    /// nginx with the shipped site (ports and a fresh certificate substituted) and a static-file server beside it.
    private static func startNginx(directory d: String, upstreamPort: Int) throws -> (Process, Int, Int) {
        let made = try RelayBenchSupport.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                                  "-keyout", d + "/tls.key", "-out", d + "/tls.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
                                                                  "-addext", "subjectAltName=IP:127.0.0.1"])
        guard made.status == 0 else { throw BenchFailure("openssl: \(made.stderr)") }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let nginxPort = try FreeLoopbackPort.find(), staticPort = try FreeLoopbackPort.find()
        let (site, config) = try NginxRelayLab.render(
            shippedSite: try String(contentsOfFile: root + "/jobs/nginx-relay.conf", encoding: .utf8), directory: d,
            upstreamPort: upstreamPort, nginxPort: nginxPort, staticPort: staticPort, certificate: d + "/tls.pem", key: d + "/tls.key", workers: 2,
            siteEdits: [("keepalive_requests 1000;", "keepalive_requests 100000;"), ("limit_conn relay_per_address 64;", "limit_conn relay_per_address 4096;"),
                        ("limit_req zone=relay_requests burst=60 nodelay;", "")])
        try site.write(toFile: d + "/site.conf", atomically: true, encoding: .utf8)
        try "{\"status\":\"ok\",\"version\":\"1.0.0\"}".write(toFile: d + "/health.json", atomically: true, encoding: .utf8)
        try config.write(toFile: d + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", d + "/nginx.conf", "-p", d]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 2, totalTimeout: 5, tls: TLSOptions(caFile: d + "/tls.pem")))
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? client.send(HTTPRequest(url: "https://127.0.0.1:\(nginxPort)/api/v1/health")))?.status == 200 { return (process, nginxPort, staticPort) }
            usleep(20_000)
        }
        throw BenchFailure("nginx did not start: \((try? String(contentsOfFile: d + "/nginx-error.log", encoding: .utf8)) ?? "")")
    }

    struct LoadResult {
        var count = 0
        var codes: [Int: Int] = [:]
        var seconds = 0.0
        var p50 = 0.0
        var p99 = 0.0
    }

    /// `clients` curl processes at once, each sending its `requests` one after the other on one keep-alive connection.
    private static func load(directory: String, label: String, clients: Int, requests: Int, request: (Int) -> (url: String, body: String?)) throws -> LoadResult {
        var processes: [(Process, String)] = []
        var configs: [String] = []
        for c in 0..<clients {
            var lines: [String] = []
            for r in 0..<requests {
                let (url, body) = request(c * requests + r)
                if r > 0 { lines.append("next") }
                lines += ["silent", "cacert = \"\(directory)/tls.pem\"", "url = \"\(url)\"", "output = \"/dev/null\"", "write-out = \"%{http_code} %{time_total}\\n\""]
                if let body { lines += ["request = \"POST\"", "header = \"Content-Type: application/json\"", "data = \"\(body)\""] }
            }
            let config = directory + "/\(label)-\(c).cfg"
            try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
            configs.append(config)
        }
        let start = DispatchTime.now()
        for (c, config) in configs.enumerated() {
            let out = directory + "/\(label)-\(c).out"
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["--config", config]
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
            processes.append((process, out))
        }
        for (process, _) in processes { process.waitUntilExit() }
        var result = LoadResult()
        result.seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        var times: [Double] = []
        for (_, out) in processes {
            for line in try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count == 2, let code = Int(fields[0]), let time = Double(fields[1]) else { continue }
                result.codes[code, default: 0] += 1
                times.append(time)
            }
        }
        times.sort()
        result.count = times.count
        if !times.isEmpty {
            result.p50 = times[times.count / 2]
            result.p99 = times[min(times.count - 1, times.count * 99 / 100)]
        }
        return result
    }

    /// The HTTP/2 APNs stand-in with a fresh provider key; returns it and the APNS_* environment pointing at it.
    private static func startStandIn(directory: String) throws -> (Process, [String: String]) {
        let key = try P256PrivateKey.generate()
        let keyFile = directory + "/AuthKey.p8"
        try key.pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let (keyID, teamID, topic) = ("BENCHKEY01", "BENCHTEAM1", "eu.vaultsync.app")
        let script: [String: Any] = ["p8": keyFile, "key_id": keyID, "team_id": teamID, "topic": topic, "answers": [String: Any](), "default": ["status": 200]]
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: directory + "/apns-script.json"))
        _ = FileManager.default.createFile(atPath: directory + "/apns.jsonl", contents: nil)
        let portFile = directory + "/apns-port.txt"
        _ = FileManager.default.createFile(atPath: portFile, contents: nil)
        try FileManager.default.createDirectory(atPath: directory + "/apns", withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", RelayBenchSupport.peersDirectory + "/apns_standin.py", "--script", directory + "/apns-script.json", "--log", directory + "/apns.jsonl",
                             "--cert-dir", directory + "/apns"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            if let port = text.split(separator: "\n").first(where: { $0.hasPrefix("PORT ") }).flatMap({ Int($0.dropFirst(5)) }) {
                return (process, ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID, "APNS_TOPIC": topic,
                                  "APNS_URL": "https://127.0.0.1:\(port)", "APNS_CA_FILE": directory + "/apns/ca.pem"])
            }
            usleep(50_000)
        }
        throw BenchFailure("the APNs stand-in did not start (needs python3-h2 and python3-cryptography)")
    }

    private static func lines(_ path: String) throws -> Int {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count
    }
}
