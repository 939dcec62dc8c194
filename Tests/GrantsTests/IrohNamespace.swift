import Foundation
import Glibc
import Testing
import TestSupport

/// A loopback-only network namespace for tests that start a real iroh peer, and the processes that run in it.
///
/// It is made exactly as `unshare -n sh -c 'ip link set lo up; exec …'`: a holder process creates the namespace,
/// brings loopback up and sleeps; every iroh peer and every `job` process it talks to is started inside it with
/// `nsenter --net=/proc/PID/ns/net`. iroh's port mapper (UPnP multicast, wildcard sockets) therefore never reaches
/// a real network. Without `unshare` (or the right to use it) the helper throws: such tests fail, never fall back.
final class IrohNamespace {
    private let holder: JobProcess.Running
    let netPath: String

    init() throws {
        for tool in ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip"] where !FileManager.default.isExecutableFile(atPath: tool) && !FileManager.default.isExecutableFile(atPath: tool.replacingOccurrences(of: "/usr/sbin", with: "/sbin")) {
            throw TestFailure("\(tool) is unavailable: iroh test peers must run inside a loopback-only network namespace (util-linux, iproute2)")
        }
        holder = try JobProcess.start(executable: "/usr/bin/unshare",
                                      ["-n", "sh", "-c", "ip link set lo up && echo ready && exec sleep 3600"],
                                      environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        netPath = "/proc/\(holder.pid)/ns/net"
        let deadline = Date().addingTimeInterval(10)
        while !holder.stdoutSoFar.contains("ready") {
            guard holder.process.isRunning, Date() < deadline else {
                let result = try? holder.wait(timeout: 1)
                throw TestFailure("cannot create a loopback-only network namespace (unshare -n): \(result?.stderr ?? "timed out")")
            }
            usleep(10_000)
        }
        // Loopback only: the namespace has no other interface.
        let links = try run("/usr/sbin/ip", ["-o", "link"], environment: ["PATH": "/usr/sbin:/usr/bin"]).stdout
        guard links.split(separator: "\n").count == 1, links.contains("lo:") else {
            throw TestFailure("the test namespace is not loopback-only: \(links)")
        }
    }

    deinit {
        holder.signal(SIGKILL)
        _ = try? holder.wait(timeout: 5)
    }

    /// Starts `executable arguments…` inside the namespace.
    func start(_ executable: String, _ arguments: [String], environment: [String: String], stdin: String? = nil) throws -> JobProcess.Running {
        try JobProcess.start(executable: "/usr/bin/nsenter", ["--net=\(netPath)", "--", executable] + arguments, environment: environment, stdin: stdin)
    }

    /// Runs `executable arguments…` inside the namespace to completion.
    func run(_ executable: String, _ arguments: [String], environment: [String: String], stdin: String? = nil,
             timeout: TimeInterval = 60) throws -> JobProcess.Result {
        try start(executable, arguments, environment: environment, stdin: stdin).wait(timeout: timeout)
    }
}

/// The real iroh: PyPI `iroh==1.2.0` in a virtual environment under `.build/iroh-venv`, created on first use (and
/// by `.ci/run`), and the peer script `Tests/Peers/iroh_peer.py`.
enum IrohPython {
    static let version = "1.2.0"
    private static let lock = NSLock()
    // nonisolated(unsafe): read and written only while `lock` is held (in `python()`).
    nonisolated(unsafe) private static var ready: String?

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static var script: String { repository.appendingPathComponent("Tests/Peers/iroh_peer.py").path }

    /// The venv's python, creating the venv and installing iroh when missing (outside any namespace: it downloads).
    static func python() throws -> String {
        lock.lock(); defer { lock.unlock() }
        if let ready { return ready }
        let venv = repository.appendingPathComponent(".build/iroh-venv").path
        let python = venv + "/bin/python"
        let environment = ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
        let check = { () -> Bool in
            FileManager.default.isExecutableFile(atPath: python) &&
                ((try? JobProcess.start(executable: python, ["-c", "import importlib.metadata as m, iroh; assert m.version('iroh') == '\(version)'"],
                                        environment: environment).wait(timeout: 60).exitCode) == 0)
        }
        if !check() {
            let made = try JobProcess.start(executable: "/usr/bin/python3", ["-m", "venv", venv], environment: environment).wait(timeout: 120)
            guard made.exitCode == 0 else { throw TestFailure("cannot create the iroh venv (python3-venv): \(made.stderr)") }
            let installed = try JobProcess.start(executable: venv + "/bin/pip", ["install", "--quiet", "iroh==\(version)"], environment: environment)
                .wait(timeout: 600)
            guard installed.exitCode == 0, check() else { throw TestFailure("cannot install iroh==\(version) into the venv: \(installed.stderr)") }
        }
        ready = python
        return python
    }
}

/// One run of `iroh_peer.py` inside a namespace: its JSON lines as they come.
final class IrohPeer {
    let process: JobProcess.Running

    init(in namespace: IrohNamespace, _ arguments: [String]) throws {
        process = try namespace.start(try IrohPython.python(), [IrohPython.script] + arguments,
                                      environment: ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "PYTHONUNBUFFERED": "1"])
    }

    /// The JSON objects printed so far.
    var lines: [[String: Any]] {
        process.stdoutSoFar.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits for the first printed object with `key`.
    func await(_ key: String, timeout: TimeInterval = 30) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = lines.first(where: { $0[key] != nil }) { return line }
            if !process.process.isRunning, lines.first(where: { $0[key] != nil }) == nil { break }
            usleep(20_000)
        }
        throw TestFailure("the iroh peer printed no \(key): \(process.stdoutSoFar) \(process.stderrSoFar.suffix(2000))")
    }

    /// Waits for the peer to exit and returns its last JSON object.
    func finish(timeout: TimeInterval = 30) throws -> [String: Any] {
        let result = try process.wait(timeout: timeout)
        let objects = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        guard let last = objects.last else { throw TestFailure("the iroh peer printed nothing: \(result.stderr.suffix(2000))") }
        return last
    }

    deinit {
        if process.process.isRunning { process.signal(SIGKILL); _ = try? process.wait(timeout: 5) }
    }
}
