import Chaos
import Cryptography
import Foundation
import Relay
import Runner
import Store

/// `relay-scale`: due Device IDs claimed, pushed and recorded per second by 1, 2 and 4 `job send-wakeups`
/// processes started at once on one PostgreSQL database, next to one process on an SQLite store, in the same run.
///
/// Each run starts from the same seeded state (N Device IDs, one token each, every one triggered; every run's store
/// is a copy of one seeded template) and ends when every process has exited; rounds run every configuration in turn
/// and the table shows each one's median run, so the shared machine's changing load falls on all of them alike. Correctness is checked,
/// not assumed: every process exits 0, the stand-in logged every token exactly once with a 200 and no refused
/// check, and the store recorded every answer and consumed every trigger. The pushes go to an HTTP/2 APNs stand-in
/// (`APNsBenchStandIn`): by default nginx answering 200, which is not the bottleneck; `--stand-in python` uses the relay
/// tests' one (provider JWT checked per request, single-threaded). Its CPU time is reported (summed over nginx's
/// processes), so a saturated stand-in shows as the bottleneck instead of hiding in the figures.
/// PostgreSQL runs durable by default (`fsync` on, as SQLite's `synchronous=FULL` is), with room for the whole
/// run in the write-ahead log so no checkpoint lands in one run and not another.
enum RelayScaleBench {
    /// The `--now` of every pass and the seeded times around it.
    static let now: Int64 = 1_780_000_000_000

    static func run(_ arguments: ArraySlice<String>) throws {
        var devices = 20_000
        var processCounts = [1, 2, 4]
        var durable = true
        var rounds = 3
        var kind = APNsBenchStandIn.Kind.nginx
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--devices": devices = try BenchOption.integer(&rest, option, in: 100...50_000)  // one pass's bound (send-wakeups' maxDevicesPerPass)
            case "--processes":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--processes needs a list such as 1,2,4") }
                let list = value.split(separator: ",").map { Int($0) }
                guard !list.isEmpty, list.allSatisfy({ $0.map { (1...16).contains($0) } ?? false }) else {
                    throw BenchUsageError(message: "--processes needs a comma-separated list of 1 to 16 (such as 1,2,4)")
                }
                processCounts = list.compactMap { $0 }
            case "--rounds": rounds = try BenchOption.integer(&rest, option, in: 1...20)
            case "--no-fsync": durable = false
            case "--stand-in":
                guard let value = rest.popFirst(), let chosen = APNsBenchStandIn.Kind(rawValue: value) else {
                    throw BenchUsageError(message: "--stand-in needs nginx or python")
                }
                kind = chosen
            case "--help", "-h":
                print("usage: job-bench relay-scale [--devices N] [--processes 1,2,4] [--rounds 3] [--no-fsync] [--stand-in nginx|python]")
                print("  --devices N        due Device IDs, one token each (default 20000, at most one pass's bound)")
                print("  --processes LIST   send-wakeups processes started at once on PostgreSQL (default 1,2,4)")
                print("  --rounds N         rounds of every configuration; the table shows the median run (default 3)")
                print("  --no-fsync         PostgreSQL with fsync off (default on, as SQLite's synchronous=FULL)")
                print("  --stand-in KIND    APNs stand-in: nginx answering 200 (default), or the Python one checking every JWT")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        let directory = try RelayBenchSupport.scratch("relay-scale")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apnsKey = directory + "/AuthKey.p8"
        try P256PrivateKey.generate().pkcs8PEM.write(toFile: apnsKey, atomically: true, encoding: .utf8)
        let (keyID, teamID, topic) = ("SCALEKEY01", "SCALETEAM1", "eu.vaultsync.app")
        let standIn = try APNsBenchStandIn.start(kind, directory: directory, keyFile: apnsKey, keyID: keyID, teamID: teamID, topic: topic)
        defer { standIn.stop() }
        let standInEnvironment = ["APNS_KEY_FILE": apnsKey, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID, "APNS_TOPIC": topic,
                                  "APNS_URL": standIn.url, "APNS_CA_FILE": standIn.caFile]

        let cores = ProcessInfo.processInfo.activeProcessorCount
        let load = ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
        print("relay-scale: \(devices) due Device IDs (1 token each) pushed to \(kind == .nginx ? "nginx answering 200 (HTTP/2, TLS, checks nothing)" : "the Python HTTP/2 APNs stand-in (JWT checked per push)") and recorded")
        print("  \(cores) cores, load average \(load) at start; senders, PostgreSQL and the stand-in share them")
        print("  PostgreSQL \(durable ? "durable (fsync on)" : "fsync off"), Unix socket; SQLite synchronous=FULL, WAL")

        let keyFile = directory + "/store-key"
        let keyHex = try SecureRandom.bytes(count: 32).map { String(format: "%02x", $0) }.joined()
        guard FileManager.default.createFile(atPath: keyFile, contents: Data((keyHex + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw BenchFailure("cannot write the store key")
        }
        let base = ["HOME": directory, "PATH": "/usr/bin:/bin", "JOB_LOG_LEVEL": "warn"].merging(standInEnvironment) { $1 }

        // SQLite: one seeded file (its key beside it, as by default), copied for each run.
        let sqliteTemplate = directory + "/template.sqlite"
        do {
            let db = try RelayBenchSupport.createStore(sqliteTemplate, job: job)
            try seed(db, key: try RelayBenchSupport.storeKey(sqliteTemplate), devices: devices)
        }
        // PostgreSQL: one seeded template database, copied for each run.
        let (cluster, dataFilesystem) = try RelayBenchSupport.startPostgres(in: directory, settings: ["shared_buffers": "256MB", "max_wal_size": "4GB",
                                                                                      "checkpoint_timeout": "30min", "max_connections": "100"], durable: durable)
        defer { cluster.stop() }
        print("  PostgreSQL data in \(cluster.directory) (\(dataFilesystem))")
        let environment = base.merging(["JOB_STORE_KEY_FILE": keyFile]) { $1 }
        let template = try cluster.createDatabase("scale_template")
        let migrate = try RelayBenchSupport.run(job, ["--store", template.conninfo, "migrate"], environment: environment)
        guard migrate.status == 0 else { throw BenchFailure("job migrate on PostgreSQL failed: \(migrate.stderr)") }
        do {
            let db = try Database(path: template.conninfo)
            try seed(db, key: try StoreKeyLocation.resolve(environment: ["JOB_STORE_KEY_FILE": keyFile], storePath: template.conninfo).load(), devices: devices)
        }

        // Rounds of every configuration in turn, so a change in the machine's other load falls on all of them alike.
        let configurations = [(label: "SQLite", processes: 1)] + processCounts.map { (label: "PostgreSQL", processes: $0) }
        var runs = [[Measured]](repeating: [], count: configurations.count)
        var copies = 0
        for _ in 0..<rounds {
            for (index, configuration) in configurations.enumerated() {
                copies += 1
                if configuration.label == "SQLite" {
                    let store = directory + "/run-\(copies).sqlite"
                    try FileManager.default.copyItem(atPath: sqliteTemplate, toPath: store)
                    try FileManager.default.copyItem(atPath: sqliteTemplate + ".key", toPath: store + ".key")
                    let db = try Database(path: store)
                    runs[index].append(try measure(label: "SQLite", store: store, processes: 1, devices: devices, job: job, environment: base,
                                                   standIn: standIn, serverCPU: { 0 }, database: db))
                    try? FileManager.default.removeItem(atPath: store)
                } else {
                    let copy = "scale_run_\(copies)"
                    try cluster.execute("CREATE DATABASE \(copy) TEMPLATE scale_template")
                    try cluster.execute("VACUUM ANALYZE", database: copy)
                    let target = cluster.database(copy)
                    let db = try Database(path: target.conninfo)
                    runs[index].append(try measure(label: "PostgreSQL", store: target.conninfo, processes: configuration.processes, devices: devices,
                                                   job: job, environment: environment, standIn: standIn,
                                                   serverCPU: { try Self.serverCPU(cluster) }, database: db))
                }
            }
        }

        // The table: the median run of each configuration (by wall time), the range of rates over the rounds.
        let medians = runs.map { $0.sorted { $0.seconds < $1.seconds }[$0.count / 2] }
        let single = zip(configurations, medians).first { $0.0.label == "PostgreSQL" && $0.0.processes == 1 }?.1
        print("  median of \(rounds) round\(rounds == 1 ? "" : "s") (each: every configuration once, in turn)")
        print("  store       processes  devices/s  (range)        vs 1 proc  seconds  split of devices     CPU ms/device: senders  store  stand-in (busy)")
        for (index, row) in medians.enumerated() {
            let speedUp = row.label == "PostgreSQL" ? single.map { RelayBenchSupport.format(row.rate / $0.rate, 2) + "×" } ?? "-" : "-"
            let perDevice = { (seconds: Double) in RelayBenchSupport.format(seconds * 1000 / Double(devices), 3) }
            let busy = Int((row.standInCPU / row.seconds * 100).rounded())
            let rates = runs[index].map(\.rate)
            let range = "(" + RelayBenchSupport.format(rates.min() ?? 0, 0) + "–" + RelayBenchSupport.format(rates.max() ?? 0, 0) + ")"
            print("  \(pad(row.label, 11)) \(pad(String(row.processes), 10)) \(pad(RelayBenchSupport.format(row.rate, 0), 10)) \(pad(range, 14)) \(pad(speedUp, 10)) \(pad(RelayBenchSupport.format(row.seconds, 2), 8)) \(pad(row.split.map(String.init).joined(separator: "+"), 20)) \(pad(perDevice(row.sendersCPU), 23)) \(pad(row.label == "SQLite" ? "(in senders)" : perDevice(row.serverCPU), 6)) \(perDevice(row.standInCPU)) (\(busy) %)")
        }
        print("  every run: each process exited 0, every token pushed exactly once (stand-in log: one 200 per token, no refused")
        print("  check), every answer recorded and every trigger consumed in the store")
        let twice = runs.joined().map { $0.split.reduce(0, +) - devices }
        print("  Device IDs counted by two passes (pushed once, consumed twice): \(twice.reduce(0, +)) in \(twice.filter { $0 > 0 }.count) of \(twice.count) runs")
        if processCounts.contains(where: { $0 > cores }) {
            print("  note: with \(cores) cores, more than \(cores) processes cannot add CPU: beyond that the speed-up is bounded by the machine")
        }
    }

    /// One measured run's figures.
    struct Measured {
        let label: String
        let processes: Int
        let seconds: Double
        var rate: Double { Double(devices) / seconds }
        let devices: Int
        /// Device IDs each process claimed.
        let split: [Int]
        /// CPU seconds of the `job` processes, of the PostgreSQL server and of the stand-in during the run.
        let sendersCPU: Double
        let serverCPU: Double
        let standInCPU: Double
    }

    private static func seed(_ db: Database, key: SecretBytes, devices: Int) throws {
        try RegistrationSeeder.seed(database: db, storeKey: key, devices: devices, tokensPerDevice: 1, registeredAt: now - 600_000, triggeredAt: now - 60_000,
                                    deviceID: { String(format: "scale-device-%08d", $0) }, token: { i, _ in token(i) }, result: { _, _ in .none })
    }

    static func token(_ i: Int) -> String { String(format: "%08x", i) + String(repeating: "5e", count: 28) }

    /// Starts `processes` passes at once, waits for them all, checks the outcome and measures wall and CPU time.
    private static func measure(label: String, store: String, processes: Int, devices: Int, job: String, environment: [String: String],
                                standIn: APNsBenchStandIn, serverCPU: () throws -> Double, database: Database) throws -> Measured {
        let offset = try standIn.entries().count
        let standInCPU = { standIn.processes().map { cpuSeconds($0, children: false) }.reduce(0, +) }
        let standInBefore = standInCPU()
        let serverBefore = try serverCPU()
        let childrenBefore = childrenCPU()
        var running: [(process: Process, output: String)] = []
        let start = DispatchTime.now()
        for i in 0..<processes {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: job)
            process.arguments = ["--store", store, "--now", "@\(now / 1000)", "--json", "send-wakeups"]
            process.environment = environment
            let output = NSTemporaryDirectory() + "job-bench-relay-scale-\(getpid())-\(i).json"
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            _ = FileManager.default.createFile(atPath: output + ".err", contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: output + ".err"))
            try process.run()
            running.append((process, output))
        }
        for (process, _) in running { process.waitUntilExit() }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let sendersCPU = childrenCPU() - childrenBefore
        let serverSeconds = try serverCPU() - serverBefore
        let standInSeconds = standInCPU() - standInBefore

        var split: [Int] = []
        var delivered = 0
        var passCounts: [String] = []
        for (process, output) in running {
            let stdout = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let stderr = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: output)
            try? FileManager.default.removeItem(atPath: output + ".err")
            guard process.terminationStatus == 0 else { throw BenchFailure("\(label) ×\(processes): a pass exited \(process.terminationStatus): \(stdout) \(stderr)") }
            let counts = RelayBenchSupport.counts(stdout)
            passCounts.append(counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            split.append(counts["devices"] ?? 0)
            delivered += counts["delivered"] ?? 0
        }
        // A Device ID counted by two passes (its token still pushed once, as checked below) is reported, not fatal.
        guard delivered == devices, split.reduce(0, +) >= devices else {
            throw BenchFailure("\(label) ×\(processes): \(delivered) delivered and \(split.reduce(0, +)) Device IDs claimed of \(devices) (passes: \(passCounts.joined(separator: "; ")); "
                               + "statuses the stand-in answered: \(try standIn.statusCounts()); its error log: \(standIn.errorLogTail()))")
        }
        // The stand-in's view: every token exactly once, all answered 200, no refused check.
        var seen = Set<String>()
        for request in try standIn.entries().dropFirst(offset) {
            guard !request.refused, request.status == 200, let token = request.token else {
                throw BenchFailure("\(label) ×\(processes): the stand-in refused a push: \(request)")
            }
            guard seen.insert(token).inserted else { throw BenchFailure("\(label) ×\(processes): a token was pushed twice") }
        }
        guard seen == Set((0..<devices).map(token)) else { throw BenchFailure("\(label) ×\(processes): the stand-in got \(seen.count) of \(devices) tokens") }
        // The store's view: every answer recorded, every trigger consumed.
        let recorded: Int = try database.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200 AND result_at = ? AND retry_due = 0", [now]) ?? -1
        let consumed: Int = try database.scalar("SELECT count(*) FROM relay_devices WHERE last_push_at = ?", [now]) ?? -1
        guard recorded == devices, consumed == devices else {
            throw BenchFailure("\(label) ×\(processes): \(recorded) answers recorded and \(consumed) triggers consumed of \(devices)")
        }
        return Measured(label: label, processes: processes, seconds: seconds, devices: devices, split: split, sendersCPU: sendersCPU,
                   serverCPU: serverSeconds, standInCPU: standInSeconds)
    }

    // MARK: CPU time

    private static let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User + system CPU seconds of `pid` (with its reaped children's when `children`), from /proc.
    static func cpuSeconds(_ pid: pid_t, children: Bool) -> Double {
        guard let fields = statFields(pid), fields.count > 14 else { return 0 }
        // After "(comm)": state is field 3, so field n is at index n - 3 (utime 14, stime 15, cutime 16, cstime 17).
        let own = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        let reaped = children ? (Double(fields[13]) ?? 0) + (Double(fields[14]) ?? 0) : 0
        return (own + reaped) / ticks
    }

    /// The fields of /proc/<pid>/stat after the command name.
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
    }

    /// The PostgreSQL server's CPU seconds so far: the postmaster, the backends it reaped, and its live processes.
    private static func serverCPU(_ cluster: PostgresCluster) throws -> Double {
        guard let postmaster = cluster.serverProcessID else { throw BenchFailure("the PostgreSQL server is not running") }
        var total = cpuSeconds(postmaster, children: true)
        for pid in processes(withParent: postmaster) { total += cpuSeconds(pid, children: true) }
        return total
    }

    /// CPU seconds of this process's reaped children (the `job` passes, once waited for).
    private static func childrenCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    private static func processes(withParent parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { statFields($0).flatMap { $0.count > 1 ? pid_t($0[1]) : nil } == parent }
    }

    private static func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
}
