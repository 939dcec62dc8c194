import Chaos
import Foundation
import Runner
import Store

/// Shared pieces of the relay scenarios: the built `job` next to `job-bench`, timed processes, the
/// Python stand-in's location, a scratch directory.
enum RelayBenchSupport {
    /// The `job` executable built beside this `job-bench`.
    static func jobExecutable() throws -> String {
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let path = URL(fileURLWithPath: selfPath).deletingLastPathComponent().appendingPathComponent("job").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchUsageError(message: "build `job` in the same configuration first (swift build -c release)")
        }
        return path
    }

    /// `Tests/Peers` in the source tree this bench was built from.
    static var peersDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Peers").path
    }

    /// A fresh scratch directory for a bench's stores on a real disk (`DiskScratch`: never tmpfs or ramfs), whose
    /// place and filesystem are printed once, so every figure says what it was measured on. Removed by the caller.
    static func scratch(_ label: String) throws -> String {
        let scratch = try DiskScratch.make(label, base: nil)
        print("\(label): stores in \(scratch.path) (\(scratch.filesystem))")
        return scratch.path
    }

    /// A PostgreSQL cluster for a bench, its folder under the bench's scratch `directory` (a disk), always from its
    /// own `initdb`; refuses a cluster that landed on a memory filesystem (`PostgresCluster` falls back to /tmp
    /// when `nobody` cannot reach `directory`). Returns the cluster and its filesystem, for the bench to print.
    static func startPostgres(in directory: String, settings: [String: String], durable: Bool) throws -> (PostgresCluster, String) {
        let cluster = try PostgresCluster.start(settings: settings, durable: durable, parent: directory, templates: nil)
        let kind = DiskScratch.filesystem(of: cluster.directory)
        guard !DiskScratch.memoryFilesystems.contains(kind) else {
            cluster.stop()
            throw BenchFailure("the PostgreSQL cluster's folder \(cluster.directory) is on \(kind); give the bench a folder on a disk")
        }
        return (cluster, kind)
    }

    /// Runs `executable arguments…` to completion; returns exit status, stdout, stderr and wall seconds.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdinFile: String? = nil) throws -> (status: Int32, stdout: String, stderr: String, seconds: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let out = NSTemporaryDirectory() + "job-bench-\(UUID().uuidString).out"
        let err = out + ".err"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: out); try? FileManager.default.removeItem(atPath: err) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        process.standardInput = try stdinFile.map { try FileHandle(forReadingFrom: URL(fileURLWithPath: $0)) } ?? FileHandle.nullDevice
        let start = DispatchTime.now()
        try process.run()
        process.waitUntilExit()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        return (process.terminationStatus, (try? String(contentsOfFile: out, encoding: .utf8)) ?? "", (try? String(contentsOfFile: err, encoding: .utf8)) ?? "", seconds)
    }

    /// The `counts` object of a `job --json` pass result.
    static func counts(_ json: String) -> [String: Int] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let counts = object["counts"] as? [String: Any] else { return [:] }
        return counts.compactMapValues { ($0 as? NSNumber)?.intValue }
    }

    /// Creates the store with `job migrate` and opens it, with its store key.
    static func createStore(_ path: String, job: String) throws -> Database {
        let migrate = try run(job, ["--store", path, "migrate"], environment: ["HOME": NSTemporaryDirectory(), "PATH": "/usr/bin:/bin"])
        guard migrate.status == 0 else { throw BenchFailure("job migrate failed: \(migrate.stderr)") }
        return try Database(path: path)
    }

    static func storeKey(_ path: String) throws -> Cryptography.SecretBytes {
        try StoreKeyLocation.resolve(environment: [:], storePath: path).load()
    }

    static func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
}

/// A bench that could not do its work (exit 70 with the message).
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import Cryptography
