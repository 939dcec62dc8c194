import Chaos
import Foundation
import Testing
import TestSupport

/// The store engines the relay role runs on; relay tests take one as their argument and run on each.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgresql

    var testDescription: String { rawValue }
}

/// A fresh, empty relay store of one kind: a file in a folder of the test, or a new database on the test process's
/// shared PostgreSQL cluster with a key file beside it (a PostgreSQL store never creates its key).
struct TestStore {
    let kind: StoreKind
    /// What `--store` gets: the file's path, or the database's `postgresql://` URI.
    let location: String
    /// What the environment must add for this store: `JOB_STORE_KEY_FILE` on PostgreSQL, nothing on SQLite.
    let environment: [String: String]
    /// The database on the cluster (PostgreSQL only).
    let database: PostgresCluster.Database?

    /// A new store of `kind`; an SQLite store is `file` in `directory`, the PostgreSQL key `store.key` there. A
    /// PostgreSQL store is a new database on `cluster`, by default the test process's shared one.
    static func make(_ kind: StoreKind, in directory: TemporaryDirectory, file: String = "store.sqlite", cluster: PostgresCluster? = nil) throws -> TestStore {
        switch kind {
        case .sqlite:
            return TestStore(kind: kind, location: directory.file(file), environment: [:], database: nil)
        case .postgresql:
            let database = try (cluster ?? PostgresCluster.shared()).createDatabase(label: "relay")
            let keyFile = directory.file("store.key")
            try writeKey(to: keyFile)
            return TestStore(kind: kind, location: database.url, environment: ["JOB_STORE_KEY_FILE": keyFile], database: database)
        }
    }

    /// Writes a fresh store key (64 hex digits) to `path`, readable by its owner only.
    static func writeKey(to path: String) throws {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined() + "\n"
        guard FileManager.default.createFile(atPath: path, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw TestFailure("cannot write the store key \(path)")
        }
    }

    /// Everything the store keeps, as bytes to search for identifiers in the clear: the SQLite file and its WAL, or
    /// a plain `pg_dump` of the database (every table's rows as text, `bytea` as hex).
    func storedBytes(cluster: PostgresCluster? = nil) throws -> Data {
        switch kind {
        case .sqlite:
            var bytes = Data()
            for suffix in ["", "-wal"] { bytes.append((try? Data(contentsOf: URL(fileURLWithPath: location + suffix))) ?? Data()) }
            return bytes
        case .postgresql:
            let cluster = try cluster ?? PostgresCluster.shared()
            let dump = try ExternalTool.run(cluster.binDirectory + "/pg_dump", ["--no-owner", "-d", database!.conninfo], separateStderr: true)
            guard dump.status == 0, !dump.output.isEmpty else { throw TestFailure("pg_dump failed: \(dump.stderr)") }
            return Data(dump.output.utf8)
        }
    }
}
