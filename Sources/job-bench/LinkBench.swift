import Cryptography
import Foundation
import Grants
import Runner
import Store

/// `link`: offers per second delivered to one `job serve-link` by D concurrent dialling processes (each a node of
/// its own holding a grant, each delivering N offers one connection at a time: QUIC handshake, hello, proof,
/// offer, result), and the median connect+proof latency; next to the same exchange between two Python iroh
/// endpoints (PyPI `iroh`, `Tests/Peers/iroh_peer.py bench-serve` alone in its process, its diallers in up to
/// eight `bench-dial` processes, so the baseline's server does not share a process with its diallers) in the same
/// run.
///
/// The same load runs twice against one store, first with every write committed alone (`serve-link --max-batch 1`),
/// then with group commit (the default): offers per second, and commits per offer from the writer's own count
/// (`link-stopped … writes= commits=`, each commit one `fdatasync` of the WAL). The store is on a real disk
/// (`DiskScratch`: the filesystem is printed, tmpfs refused) whose own write+fdatasync rate is measured first.
///
/// Everything runs inside a loopback-only network namespace (`unshare -n`): iroh's port mapper would otherwise
/// send UPnP multicast. Build first: `swift build -c release` (the `job` beside `job-bench` is used), and create
/// the iroh venv (`.build/iroh-venv`, see `.ci/run`).
enum LinkBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var dialers = 64
        var offers = 20
        var python = ".build/iroh-venv/bin/python"
        var script = "Tests/Peers/iroh_peer.py"
        var inside = false
        var storeDir: String?
        var traced = false
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--dialers": dialers = try BenchOption.integer(&rest, option, in: 1...256)
            case "--offers": offers = try BenchOption.integer(&rest, option, in: 1...1000)
            case "--python":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--python needs a path") }
                python = value
            case "--script":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--script needs a path") }
                script = value
            case "--inside": inside = true
            case "--strace": traced = true
            case "--store-dir":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--store-dir needs a folder") }
                storeDir = value
            case "--dial":
                // A dialling child: --dial STORE ADDRESS SERVER_HEX OFFERS GO_FILE
                let values = Array(rest.prefix(5))
                guard values.count == 5, let count = Int(values[3]) else { throw BenchUsageError(message: "--dial STORE ADDRESS SERVER OFFERS GO") }
                try dial(store: values[0], address: values[1], server: values[2], offers: count, go: values[4])
                return
            case "--help", "-h":
                print("usage: job-bench link [--dialers D] [--offers N] [--python PATH] [--script PATH] [--store-dir DIR] [--strace]")
                print("  --dialers D     concurrent dialling processes (default 64)")
                print("  --offers N      offers each delivers, one connection each (default 20)")
                print("  --python PATH   the iroh venv's python (default .build/iroh-venv/bin/python)")
                print("  --script PATH   the iroh peer script (default Tests/Peers/iroh_peer.py)")
                print("  --store-dir DIR where the stores go (default $TMPDIR or /tmp, else .build/; never a memory filesystem)")
                print("  --strace        also count serve-link's fdatasync and fsync calls (strace -f -c; slows it, so its offers/s are not comparable)")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        guard inside else {
            // Re-run inside a loopback-only network namespace; never fall back to the host's network.
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else {
                throw BenchUsageError(message: "unshare (util-linux) is needed: the benchmark runs iroh only inside a loopback-only network namespace")
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            process.arguments = ["-n", "sh", "-c", "ip link set lo up && exec \"$0\" link --inside \"$@\"", selfPath] + Array(arguments)
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw BenchUsageError(message: "the run inside the namespace failed (unshare needs root or user namespaces)") }
            return
        }
        try measure(dialers: dialers, offers: offers, python: python, script: script, storeDir: storeDir, traced: traced)
    }

    static var selfPath: String { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0] }
    static var jobPath: String { URL(fileURLWithPath: selfPath).deletingLastPathComponent().appendingPathComponent("job").path }

    /// Runs `job --store STORE arguments…` and returns stdout; throws on failure.
    @discardableResult
    static func job(_ store: String, _ arguments: [String], stdin: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: jobPath)
        process.arguments = ["--store", store] + arguments
        process.environment = ["HOME": NSTemporaryDirectory(), "PATH": "/usr/bin:/bin", "JOB_LOG_LEVEL": "error"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchUsageError(message: "job \(arguments.first ?? "") failed") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func measure(dialers: Int, offers: Int, python: String, script: String, storeDir: String?, traced: Bool) throws {
        let scratch = try DiskScratch.make("link", base: storeDir)
        let folder = scratch.path
        defer { scratch.remove() }
        let flushes = try scratch.flushesPerSecond()
        print("link: stores in \(folder) (\(scratch.filesystem)); this disk: \(RelayBenchSupport.format(flushes, 0)) write+fdatasync/s")
        let alice = folder + "/alice.sqlite"
        let aliceID = try endpoint(alice)
        for (key, value) in [("link.max-connections-per-address", "4096"), ("link.max-connections", "4096"),
                             ("limits.max-pending-offers", "10000"), ("limits.offers-per-hour", "1000")] {
            try job(alice, ["settings", "set", key, value])
        }
        // The first server picks a free port; the holders' grants name it, so the second listens on the same one.
        var (server, serverLog, port) = try startServer(alice, folder: folder, port: "0", maxBatch: 1)
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        let address = "127.0.0.1:\(port)"

        print("link: \(dialers) dialling processes × \(offers) offers to one serve-link (QUIC on loopback, in a network namespace)")
        var holders: [String] = []
        for index in 0..<dialers {
            let store = folder + "/holder-\(index).sqlite"
            let id = try endpoint(store)
            try job(store, ["grants", "accept", "--label", "alice", "--addr", address], stdin: try job(alice, ["grants", "issue", "--to", id]))
            holders.append(store)
        }
        var rates: [(String, Double)] = []
        for (round, (label, batch)) in [("ours, one commit per offer (--max-batch 1)", 1), ("ours, group commit (default)", 256)].enumerated() {
            if round > 0 { (server, serverLog, _) = try startServer(alice, folder: folder, port: port, maxBatch: batch) }
            let before = try Database(path: alice).scalar("SELECT count(*) FROM incoming_offers") ?? 0
            let tracer = traced ? try trace(server.processIdentifier, output: folder + "/strace-\(batch).txt") : nil
            let (elapsed, median) = try load(holders: holders, address: address, server: aliceID, offers: offers, go: folder + "/go-\(round)")
            let stored = (try Database(path: alice).scalar("SELECT count(*) FROM incoming_offers") ?? 0) - before
            var syncs: Int?
            if let tracer {
                kill(tracer.processIdentifier, SIGINT)
                tracer.waitUntilExit()
                syncs = syncCalls(folder + "/strace-\(batch).txt")
            }
            server.terminate()
            server.waitUntilExit()
            let log = (try? String(contentsOfFile: serverLog, encoding: .utf8)) ?? ""
            func field(_ name: String) -> Int? {
                log.split(separator: "\n").last { $0.contains("event=link-stopped") }?.split(separator: " ")
                    .first { $0.hasPrefix(name + "=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
            }
            guard let writes = field("writes"), let commits = field("commits"), stored > 0 else { throw BenchFailure("serve-link logged no writes/commits at stop") }
            let rate = Double(stored) / elapsed
            rates.append((label, rate))
            print("  \(label): " + String(format: "%d offers stored in %.2f s = %.0f offers/s; median connect+proof %.2f ms; "
                         + "%d writes in %d commits = %.3f commits (fdatasyncs of the WAL) per offer; offers/s per disk flush/s %.2f",
                         stored, elapsed, rate, median * 1000, writes, commits, Double(commits) / Double(stored), rate / flushes))
            if let syncs { print("    under strace: \(syncs) fdatasync+fsync calls = " + String(format: "%.3f", Double(syncs) / Double(stored)) + " per offer") }
            if stored != dialers * offers { print("  warning: \(dialers * offers - stored) offers were not stored") }
        }

        let (count, seconds, latency) = try irohBaseline(dialers: dialers, offers: offers, python: python, script: script, go: folder + "/go-iroh")
        let rate = Double(count) / seconds
        print(String(format: "  iroh (PyPI iroh, Python endpoints storing nothing; server alone in its process, diallers in %d others): "
                     + "%d offers in %.2f s = %.0f offers/s; median connect+proof %.2f ms", irohProcesses(dialers), count, seconds, rate, latency * 1000))
        for (label, ours) in rates { print("  ratio \(label) / iroh: " + String(format: "%.2f×", ours / rate)) }
    }

    /// Dialling processes the iroh baseline spreads its diallers over (each a Python process of its own).
    static func irohProcesses(_ dialers: Int) -> Int { min(dialers, 8) }

    /// The iroh baseline: `iroh_peer.py bench-serve` alone in its process, and `dialers` iroh diallers spread over
    /// `irohProcesses` `bench-dial` processes, all starting once `go` appears; returns offers, seconds and the
    /// median connect+proof latency.
    static func irohBaseline(dialers: Int, offers: Int, python: String, script: String, go: String) throws -> (Int, Double, Double) {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: python)
        server.arguments = [script, "bench-serve"]
        let serverOutput = Pipe()
        server.standardOutput = serverOutput
        try server.run()
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let chunk = serverOutput.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchFailure("the iroh baseline server did not start") }
            first.append(chunk)
        }
        let line = first.prefix { $0 != UInt8(ascii: "\n") }
        guard let ready = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], let id = ready["id"] as? String,
              let port = ready["port"] as? Int, let grantID = ready["grant_id"] as? String, let grantSecret = ready["grant_secret"] as? String else {
            throw BenchFailure("the iroh baseline server printed no ready line")
        }
        let processes = irohProcesses(dialers)
        let children = try (0..<processes).map { index -> (Process, Pipe) in
            let share = dialers / processes + (index < dialers % processes ? 1 : 0)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: python)
            child.arguments = [script, "bench-dial", id, String(port), grantID, grantSecret, String(share), String(offers), go]
            let output = Pipe()
            child.standardOutput = output
            try child.run()
            return (child, output)
        }
        usleep(3_000_000)   // every child has imported iroh and bound its endpoints, and waits for the go file
        let start = Date()
        guard FileManager.default.createFile(atPath: go, contents: nil) else {
            for (child, _) in children { child.terminate() }
            throw BenchFailure("cannot create the go file \(go)")
        }
        var latencies: [Double] = []
        for (child, output) in children {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            child.waitUntilExit()
            guard let last = text.split(separator: "\n").last, let object = try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any],
                  let values = object["latencies"] as? [Double] else { throw BenchFailure("an iroh baseline dialler failed: \(text)") }
            latencies += values
        }
        let elapsed = Date().timeIntervalSince(start)
        latencies.sort()
        return (latencies.count, elapsed, latencies.isEmpty ? 0 : latencies[latencies.count / 2])
    }

    /// `strace -f -c -e trace=fdatasync,fsync` attached to `pid`, its summary in `output` once it gets SIGINT.
    static func trace(_ pid: Int32, output: String) throws -> Process {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else { throw BenchUsageError(message: "--strace needs /usr/bin/strace") }
        let tracer = Process()
        tracer.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        tracer.arguments = ["-f", "-c", "-e", "trace=fdatasync,fsync", "-o", output, "-p", String(pid)]
        tracer.standardError = FileHandle.nullDevice
        try tracer.run()
        usleep(500_000)   // attached to every thread
        return tracer
    }

    /// The fdatasync and fsync calls in an `strace -c` summary (its "calls" column).
    static func syncCalls(_ file: String) -> Int {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").reduce(0) { total, line in
            let columns = line.split(separator: " ")
            guard let name = columns.last, name == "fdatasync" || name == "fsync", columns.count >= 5, let calls = Int(columns[3]) else { return total }
            return total + calls
        }
    }

    /// Starts `serve-link --listen 127.0.0.1:PORT --max-batch N` over `store`, its stderr (info level) in a file;
    /// returns it, the log file and the bound port.
    static func startServer(_ store: String, folder: String, port: String, maxBatch: Int) throws -> (Process, String, String) {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: jobPath)
        server.arguments = ["--store", store, "serve-link", "--listen", "127.0.0.1:\(port)", "--max-batch", String(maxBatch)]
        server.environment = ["HOME": folder, "PATH": "/usr/bin:/bin", "JOB_LOG_LEVEL": "info"]
        let serverOut = folder + "/serve-link-\(maxBatch).out"
        let serverLog = folder + "/serve-link-\(maxBatch).log"
        guard FileManager.default.createFile(atPath: serverOut, contents: nil), FileManager.default.createFile(atPath: serverLog, contents: nil) else {
            throw BenchFailure("cannot create \(serverOut)")
        }
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: serverOut))
        server.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: serverLog))
        try server.run()
        var bound: String?
        let deadline = Date().addingTimeInterval(20)
        while bound == nil && Date() < deadline {
            let text = (try? String(contentsOfFile: serverOut, encoding: .utf8)) ?? ""
            bound = text.range(of: "listening on 127.0.0.1:").flatMap { text[$0.upperBound...].split(separator: "\n").first.map(String.init) }
            if bound == nil { usleep(20_000) }
        }
        guard let bound else {
            server.terminate()
            throw BenchUsageError(message: "serve-link did not start")
        }
        return (server, serverLog, bound)
    }

    /// One round: every holder's dialling child delivers `offers` offers once `go` appears; returns the seconds it
    /// took and the median connect+proof latency.
    static func load(holders: [String], address: String, server: String, offers: Int, go: String) throws -> (Double, Double) {
        let children = try holders.map { store -> (Process, Pipe) in
            let child = Process()
            child.executableURL = URL(fileURLWithPath: selfPath)
            child.arguments = ["link", "--dial", store, address, server, String(offers), go]
            let output = Pipe()
            child.standardOutput = output
            try child.run()
            return (child, output)
        }
        usleep(500_000)   // every child has loaded its store and waits for the go file
        let start = Date()
        guard FileManager.default.createFile(atPath: go, contents: nil) else {
            for (child, _) in children { child.terminate() }   // they would wait for the go file forever
            throw BenchFailure("cannot create the go file \(go)")
        }
        var latencies: [Double] = []
        for (child, output) in children {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            child.waitUntilExit()
            latencies += text.split(whereSeparator: \.isWhitespace).compactMap { Double($0) }
        }
        let elapsed = Date().timeIntervalSince(start)
        latencies.sort()
        return (elapsed, latencies.isEmpty ? 0 : latencies[latencies.count / 2])
    }

    /// A node's endpoint id (creating the node).
    static func endpoint(_ store: String) throws -> String {
        let text = try job(store, ["--json", "node", "show"])
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], let id = object["endpoint_id"] as? String else {
            throw BenchUsageError(message: "node show printed no endpoint id")
        }
        return id
    }

    /// One dialling process: loads its node and grant, waits for `go`, then delivers `offers` offers, one
    /// connection each, printing each connect+proof latency in seconds.
    static func dial(store: String, address: String, server: String, offers: Int, go: String) throws {
        let database = try Database(path: store)
        let vault = Vault(keyring: try StoreKeyring(storeKey: try StoreKeyLocation(path: store + ".key", createIfMissing: false).load()))
        guard let identity = try NodeIdentity.load(database, vault: vault),
              let contactID: Int64 = try database.scalar("SELECT id FROM contacts"),
              let grant = try HeldGrants(database: database, vault: vault).usable(contactID: contactID) else {
            throw BenchUsageError(message: "the holder store has no grant")
        }
        let expected = try EndpointID(hex: server)
        let target = try LinkAddress.parseLink(address)
        while !FileManager.default.fileExists(atPath: go) { usleep(1000) }
        var lines: [String] = []
        for _ in 0..<offers {
            let start = Date()
            let connection = try LinkConnection.dial(target, expected: expected, protocolName: .offer, identity: identity, connectTimeout: 10)
            guard try ProofExchange.prove(connection, grant: grant, identity: identity) == .accepted else {
                throw BenchUsageError(message: "the proof was refused")
            }
            lines.append(String(Date().timeIntervalSince(start)))
            let offer = OfferPayload(offerID: Hex.encode(try SecureRandom.bytes(count: 16)), ticket: "bench", senderName: nil, fileCount: 1, totalBytes: 1)
            guard case .object(let fields) = offer.json else { throw BenchUsageError(message: "an offer is an object") }
            try connection.send(.object([("type", "offer")] + fields))
            _ = try connection.receive()
            connection.close()
        }
        print(lines.joined(separator: "\n"))
    }
}
