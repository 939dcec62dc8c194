import Foundation
import Runner
import Store

/// The scratch stores of a chaos run: one seeded template, copied afresh for every round.
package struct ChaosStore: Sendable {
    package let directory: String
    package var template: String { directory + "/template.sqlite" }
    package var store: String { directory + "/store.sqlite" }

    package init(directory: String) { self.directory = directory }

    /// Creates the template with `job migrate` (so the store has every module's tables and its store key)
    /// and opens it for seeding.
    package func createTemplate(_ job: ChaosProcess) throws -> Database {
        for suffix in ["", "-wal", "-shm", ".key"] { try? FileManager.default.removeItem(atPath: template + suffix) }
        let migrate = try job.run(["--store", template, "migrate"])
        guard migrate.exitCode == 0 else { throw ChaosFailure("job migrate failed: \(migrate.stderr)") }
        _ = try templateKey()  // created beside the store if `migrate` did not need it yet
        return try Database(path: template)
    }

    /// The template's store key (for sealing seeded secrets).
    package func templateKey() throws -> Cryptography.SecretBytes {
        try StoreKeyLocation.resolve(environment: [:], storePath: template).load()
    }

    /// Folds the template's WAL into the main file so a plain file copy is the whole store.
    package func sealTemplate(_ database: Database) throws {
        try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Passes the ledger of `path` records as abandoned (killed, then taken over).
    package static func abandonedPasses(_ path: String) throws -> Int {
        try Database(path: path).scalar("SELECT count(*) FROM job_runs WHERE outcome = 'failed' AND reason = 'killed'") ?? 0
    }

    /// Replaces the round store with a fresh copy of the template (file and store key).
    package func freshCopy() throws {
        for suffix in ["", "-wal", "-shm", ".key"] { try? FileManager.default.removeItem(atPath: store + suffix) }
        try FileManager.default.copyItem(atPath: template, toPath: store)
        try FileManager.default.copyItem(atPath: template + ".key", toPath: store + ".key")
    }

    /// The checks every job shares after a settled round: the file is sound, foreign keys hold, the ledger
    /// shows no pass still `running`, no failed pass but the abandoned (killed) ones, and no lease left.
    /// `stopped`: passes stopped by SIGTERM (failed/`cancelled`) are expected too (a graceful kill loop).
    package static func commonViolations(_ db: Database, stopped: Bool = false) throws -> [String] {
        var violations: [String] = []
        let integrity: String? = try db.scalar("PRAGMA integrity_check")
        if integrity != "ok" { violations.append("integrity_check: \(integrity ?? "nil")") }
        let foreignKeys = try db.query("PRAGMA foreign_key_check")
        if !foreignKeys.isEmpty { violations.append("foreign_key_check: \(foreignKeys.count) rows") }
        let running: Int = try db.scalar("SELECT count(*) FROM job_runs WHERE outcome = 'running'") ?? -1
        if running != 0 { violations.append("ledger: \(running) pass(es) still marked running after the settled rerun") }
        // A killed pass is recorded by the pass that takes its lease over as failed/killed (the loop checks
        // their number against the kills); any other failure is a violation.
        let expected = stopped ? "('killed', 'cancelled')" : "('killed')"
        let failed = try db.query("SELECT coalesce(reason, '-'), exit_code FROM job_runs WHERE outcome = 'failed' AND coalesce(reason, '') NOT IN \(expected)")
        if !failed.isEmpty {
            let reasons = try failed.map { "\(try $0.get(0, as: String.self))/\(try $0.get(1, as: Int?.self).map(String.init) ?? "-")" }
            violations.append("ledger: \(failed.count) failed pass(es): \(reasons.joined(separator: ", "))")
        }
        let leases: Int = try db.scalar("SELECT count(*) FROM job_leases") ?? -1
        if leases != 0 { violations.append("lease still held after the settled rerun") }
        return violations
    }
}

/// A chaos run that could not do its work (as opposed to a violated invariant, which is reported).
package struct ChaosFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

import Cryptography
