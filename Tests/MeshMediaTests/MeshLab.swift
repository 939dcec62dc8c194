import Foundation
import Store
import TestSupport

/// Several mesh nodes, each its own store in one temporary folder, driven through the real `job` binary with an
/// emulated clock. `pump` plays the radio: every node's outbox pass, the exchanges along the given links, every
/// node's inbox pass, then 100 ms pass.
final class MeshLab {
    let directory = TemporaryDirectory("mesh")
    /// Emulated time in Unix ms.
    var clock: Int64 = 1_790_000_000_000
    private(set) var peerIDs: [String: String] = [:]
    /// Everything every process wrote to stderr (logs and error lines), for the privacy checks.
    private(set) var stderrLog = ""

    func store(_ node: String) -> String { directory.file("\(node).sqlite") }
    func mediaFolder(_ node: String) -> String { store(node) + ".media" }

    var nowArgument: String { "@\(clock / 1000).\(String(format: "%03d", clock % 1000))" }

    /// Runs `job --store <node> --now … [--json] args` and checks its exit code.
    @discardableResult
    func job(_ node: String, _ args: [String], json: Bool = false, exit expected: Int32 = 0) throws -> JobProcess.Result {
        var full = ["--store", store(node), "--now", nowArgument]
        if json { full.append("--json") }
        let result = try JobProcess.run(full + args, environment: JobProcess.environment(home: directory.path))
        stderrLog += result.stderr
        guard result.exitCode == expected else {
            throw TestFailure("job \(args.joined(separator: " ")) on \(node) exited \(result.exitCode), expected \(expected); stdout: \(result.stdout.prefix(500)) stderr: \(result.stderr.prefix(500))")
        }
        return result
    }

    /// Creates a node and remembers its peer id.
    @discardableResult
    func initNode(_ node: String, emulate: String = "current") throws -> String {
        let result = try job(node, ["mesh", "init", "--nickname", node, "--emulate", emulate], json: true)
        let id = try result.jsonObject()["peer_id"] as! String
        peerIDs[node] = id
        return id
    }

    func id(_ node: String) -> String { peerIDs[node]! }

    @discardableResult
    func exchange(_ from: String, _ to: String) throws -> Int {
        try job(from, ["mesh", "exchange", "--to", store(to)], json: true).jsonObject()["carried"] as! Int
    }

    /// Counts of one pass.
    func pass(_ node: String, _ name: String, _ extra: [String] = []) throws -> [String: Int] {
        let object = try job(node, [name] + extra, json: true).jsonObject()
        return object["counts"] as? [String: Int] ?? [:]
    }

    /// Runs `rounds` radio rounds and returns each node's summed inbox and outbox counts.
    @discardableResult
    func pump(_ nodes: [String], links: [(String, String)], rounds: Int) throws -> [String: [String: Int]] {
        var totals: [String: [String: Int]] = [:]
        for _ in 0..<rounds {
            for node in nodes { totals[node, default: [:]].merge(try pass(node, "media-outbox"), uniquingKeysWith: +) }
            for (from, to) in links { try exchange(from, to) }
            for node in nodes { totals[node, default: [:]].merge(try pass(node, "media-inbox"), uniquingKeysWith: +) }
            clock += 100
        }
        return totals
    }

    /// Both directions of every pair in `pairs`.
    static func bidirectional(_ pairs: [(String, String)]) -> [(String, String)] { pairs.flatMap { [($0.0, $0.1), ($0.1, $0.0)] } }

    /// Announces every node and carries the announces across `links` (relays included).
    func announceAll(_ nodes: [String], links: [(String, String)], rounds: Int = 2) throws {
        for node in nodes { try job(node, ["mesh", "announce"]) }
        try pump(nodes, links: links, rounds: rounds)
    }

    func peers(_ node: String) throws -> [[String: Any]] {
        try JSONSerialization.jsonObject(with: Data(try job(node, ["mesh", "peers"], json: true).stdout.utf8)) as! [[String: Any]]
    }

    func sends(_ node: String) throws -> [[String: Any]] {
        try JSONSerialization.jsonObject(with: Data(try job(node, ["mesh", "sends"], json: true).stdout.utf8)) as! [[String: Any]]
    }

    func peer(_ node: String, sees other: String) throws -> [String: Any]? {
        try peers(node).first { $0["peer_id"] as? String == id(other) }
    }

    /// Writes `bytes` to a file in the lab folder and returns its path.
    func file(_ name: String, _ bytes: [UInt8]) -> String {
        let path = directory.file(name)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    /// Files delivered to `node`'s media folder.
    func delivered(_ node: String) -> [String: [UInt8]] {
        let folder = mediaFolder(node)
        var files: [String: [UInt8]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where !name.hasPrefix(".") {
            files[name] = [UInt8](FileManager.default.contents(atPath: folder + "/" + name) ?? Data())
        }
        return files
    }

    /// Direct access to a node's store (for hostile frames and for emulating device restarts).
    func database(_ node: String) throws -> Database { try Database(path: store(node)) }

    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
