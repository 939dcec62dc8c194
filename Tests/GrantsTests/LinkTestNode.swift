import Cryptography
import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// A node for two-node tests: its own home and store, driven through the real `job` binary, with a real
/// `serve-link --listen 127.0.0.1:0` process when started. With a namespace, every `job` process runs inside it.
final class LinkTestNode {
    let home = TemporaryDirectory("node")
    let namespace: IrohNamespace?

    init(namespace: IrohNamespace? = nil) { self.namespace = namespace }

    /// Starts `job arguments…`, inside the namespace when there is one.
    func startJob(_ arguments: [String], stdin: String? = nil) throws -> JobProcess.Running {
        if let namespace { return try namespace.start(JobProcess.executablePath, arguments, environment: environment, stdin: stdin) }
        return try JobProcess.start(arguments, environment: environment, stdin: stdin)
    }
    var store: String { home.file("store.sqlite") }
    var notifyLog: String { home.file("notify.log") }
    private(set) var server: JobProcess.Running?
    private(set) var port: UInt16 = 0
    /// Every stderr written by this node's processes, for the privacy checks.
    private(set) var stderrSeen = ""
    private let lock = NSLock()

    var environment: [String: String] {
        JobProcess.environment(home: home.path, ["JOB_NOTIFY_COMMAND": "echo \"$JOB_NOTIFY_KIND $JOB_NOTIFY_COUNT\" >> '\(notifyLog)'"])
    }

    /// Runs `job --store <store> [--now NOW] arguments…`.
    @discardableResult
    func run(_ arguments: [String], now: String? = nil, stdin: String? = nil, timeout: TimeInterval = 60) throws -> JobProcess.Result {
        var full = ["--store", store]
        if let now { full += ["--now", now] }
        let result = try startJob(full + arguments, stdin: stdin).wait(timeout: timeout)
        lock.lock(); stderrSeen += result.stderr; lock.unlock()
        return result
    }

    /// Runs a command that must succeed and returns its stdout.
    @discardableResult
    func ok(_ arguments: [String], now: String? = nil, stdin: String? = nil) throws -> String {
        let result = try run(arguments, now: now, stdin: stdin)
        guard result.exitCode == 0 else { throw TestFailure("job \(arguments) exited \(result.exitCode): \(result.stderr)") }
        return result.stdout
    }

    /// Runs a `--json` command that must succeed and returns its object.
    func json(_ arguments: [String], now: String? = nil) throws -> [String: Any] {
        let result = try run(["--json"] + arguments, now: now)
        guard result.exitCode == 0 else { throw TestFailure("job \(arguments) exited \(result.exitCode): \(result.stderr)") }
        return try result.jsonObject()
    }

    lazy var endpointHex: String = { try! json(["node", "show"])["endpoint_id"] as! String }()
    var endpoint: EndpointID { try! EndpointID(hex: endpointHex) }
    var address: String { "127.0.0.1:\(port)" }

    /// Starts `serve-link --listen 127.0.0.1:PORT` (0: a free port) and reads the bound port from its first line.
    func startServer(now: String? = nil, port requested: UInt16 = 0) throws {
        _ = endpointHex
        var arguments = ["--store", store]
        if let now { arguments += ["--now", now] }
        arguments += ["serve-link", "--listen", "127.0.0.1:\(requested)", "--idle-exit", "300"]
        let process = try startJob(arguments)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let text = process.stdoutSoFar
            if let range = text.range(of: "listening on 127.0.0.1:"), let line = text[range.upperBound...].split(separator: "\n").first,
               let value = UInt16(line) {
                server = process
                port = value
                return
            }
            if !process.process.isRunning { break }
            usleep(20_000)
        }
        process.signal(SIGKILL)
        let result = try? process.wait(timeout: 5)
        throw TestFailure("serve-link did not start: \(result?.stderr ?? "")")
    }

    /// Stops the server (SIGTERM) and returns its stderr.
    @discardableResult
    func stopServer() throws -> String {
        guard let server else { return "" }
        self.server = nil
        server.signal(SIGTERM)
        let result = try server.wait(timeout: 20)
        lock.lock(); stderrSeen += result.stderr; lock.unlock()
        return result.stderr
    }

    /// Kills the server (SIGKILL: no chance to finish anything) and waits for it to be gone.
    func killServer() {
        guard let server else { return }
        self.server = nil
        server.signal(SIGKILL)
        _ = try? server.wait(timeout: 10)
    }

    /// The server's stderr so far.
    var serverLog: String { server?.stderrSoFar ?? "" }

    deinit { if let server { server.signal(SIGKILL); _ = try? server.wait(timeout: 5) } }

    // MARK: In-process access to the same store

    /// The store as the binary migrated it (with every module's tables, not only this module's).
    func database() throws -> Database {
        _ = endpointHex
        return try Database(path: store)
    }

    func vault() throws -> Vault {
        Vault(keyring: try StoreKeyring(storeKey: try StoreKeyLocation(path: store + ".key", createIfMissing: false).load()))
    }

    func identity() throws -> NodeIdentity {
        _ = endpointHex
        return try #require(try NodeIdentity.load(try database(), vault: try vault()))
    }

    func scalar(_ sql: String) throws -> Int { try database().scalar(sql) ?? 0 }
}

/// `issuer` lets `holder` reach it: issue on the issuer, accept on the holder with the issuer's server address.
func pair(issuer: LinkTestNode, holder: LinkTestNode, label: String, address: String? = nil) throws {
    let bundle = try issuer.ok(["grants", "issue", "--to", holder.endpointHex])
    try holder.ok(["grants", "accept", "--label", label, "--addr", address ?? issuer.address], stdin: bundle)
}

/// A ticket file in `node`'s home.
func ticketFile(_ node: LinkTestNode, _ text: String) -> String {
    let path = node.home.file("ticket-\(UUID().uuidString.prefix(6)).txt")
    _ = FileManager.default.createFile(atPath: path, contents: Data((text + "\n").utf8))
    return path
}

/// Lines of the notify log (each run of JOB_NOTIFY_COMMAND appends one).
func notifications(_ node: LinkTestNode) -> [String] {
    ((try? String(contentsOfFile: node.notifyLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
}
