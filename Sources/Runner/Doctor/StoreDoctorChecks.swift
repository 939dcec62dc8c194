import Foundation
import Store

/// The runner's `job doctor` checks: the store file, its schema, its key and the metrics folder.
enum StoreDoctorChecks {
    static let group = DoctorGroup(name: "store", checks: [
        DoctorCheck(name: "store-integrity") { session in
            // The full "PRAGMA integrity_check": unlike quick_check it also verifies UNIQUE constraints and that every
            // index matches its table (O(N log N)). Damage a pass never reads (a relay table's index) is found here.
            if session.context.database.engine == .postgresql {
                // PostgreSQL checks its own pages; what matters here is a primary that accepts writes.
                do {
                    let standby: Bool = try session.context.database.scalar("SELECT pg_is_in_recovery()") ?? false
                    return standby ? .fail("the PostgreSQL server is a standby (in recovery); point --store at the primary", .unavailable)
                        : .pass("the PostgreSQL server answers and is a primary")
                } catch {
                    return .fail(StoreFailure.jobError(for: error))
                }
            }
            do {
                let rows = try session.context.database.query("PRAGMA integrity_check(10)")
                let messages = try rows.map { try $0.get(0, as: String.self) }
                return messages == ["ok"] ? .pass("integrity_check reports ok")
                    : .fail("integrity_check found \(messages.count == 10 ? "10 or more" : String(messages.count)) problem(s): the store is damaged; stop the jobs and restore a backup", .cannotCreate)
            } catch {
                return .fail(StoreFailure.jobError(for: error))
            }
        },
        DoctorCheck(name: "store-writable") { session in
            // Opening falls back to read-only when the file is write-protected; every pass would then fail with 73.
            // A row written and rolled back proves writes can happen, and changes nothing.
            struct Probe: Error {}
            do {
                try session.context.database.write { db in
                    try db.execute("INSERT INTO settings (key, value, updated_at) VALUES ('doctor.write-probe', '', 0) ON CONFLICT (key) DO NOTHING")
                    throw Probe()
                }
                return .pass("the store can be written")
            } catch is Probe {
                return .pass("the store can be written")
            } catch {
                let failure = StoreFailure.jobError(for: error)
                // A warning, not a failure: doctor reads a read-only copy (a backup, a snapshot mount) to vet it,
                // and exits 0 unless another check fails (docs/operations.md).
                if failure.category == "store-read-only" {
                    return .warn("the store is read-only for this user (its file, folder or mount); every pass would fail with 73 — check the owner, the mode and how it is mounted")
                }
                return .fail(failure)
            }
        },
        DoctorCheck(name: "store-schema") { session in
            let db = session.context.database
            do {
                let applied: Int = try db.scalar("SELECT count(*) FROM schema_migrations") ?? 0
                if db.engine == .postgresql {
                    let version: String = try db.scalar("SHOW server_version") ?? "?"
                    return .pass("\(applied) migrations applied, PostgreSQL \(version)")
                }
                let journal: String = try db.scalar("PRAGMA journal_mode") ?? "?"
                return .pass("\(applied) migrations applied, journal mode \(journal)")
            } catch { return .fail(StoreFailure.jobError(for: error)) }
        },
        DoctorCheck(name: "store-key") { session in
            let location = StoreKeyLocation.resolve(environment: session.context.environment, storePath: session.context.storePath)
            let sealed: Int = (try? session.context.database.scalar("SELECT count(*) FROM store_key_check")) ?? 0
            if location.createIfMissing && !FileManager.default.fileExists(atPath: location.path) && sealed == 0 {
                return .skip("no key yet: <store>.key is created on first use (or configure LoadCredential=store-key)")
            }
            do {
                _ = try session.context.storeKey()
                return .pass("the store key is readable and matches this store")
            } catch { return .fail(StoreFailure.jobError(for: error)) }
        },
        DoctorCheck(name: "metrics-dir") { session in
            guard let directory = session.context.env("JOB_METRICS_DIR") else { return .skip("no --metrics-dir / JOB_METRICS_DIR") }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                return .fail("the metrics directory does not exist; create it or fix JOB_METRICS_DIR", .configuration)
            }
            guard access(directory, W_OK) == 0 else {
                return .fail("the metrics directory is not writable by this user", .configuration)
            }
            return .pass("the metrics directory is writable")
        },
    ])
}
