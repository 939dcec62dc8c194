import Foundation
import Relay
import Store

/// `clean-tokens`: one pass over N registrations (default 1,000,000) of which 1 % are invalid, next to the
/// same deletion as plain SQL through the `sqlite3` shell on identical copies of the store: the job's own
/// temp-table form, and a bare `DELETE` (the rule in one statement, then every Device ID left without a token).
/// The bare `DELETE` runs first, the job second, the temp-table SQL last, so the job is neither first nor last to
/// meet the page cache.
///
/// Seeded: N/2 Device IDs with two tokens each; every 100th token carries a removable verdict
/// (alternately `BadDeviceToken` and a 410 newer than its registration), every 1000th token (offset 500)
/// a 410 older than its registration (kept), the rest a 200.
enum CleanTokensBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var registrations = 1_000_000
        var keep = false
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--registrations":
                guard let value = rest.popFirst(), let n = Int(value), n >= 200, n % 2 == 0 else {
                    throw BenchUsageError(message: "--registrations needs an even number ≥ 200")
                }
                registrations = n
            case "--keep": keep = true
            case "--help", "-h":
                print("usage: job-bench clean-tokens [--registrations N] [--keep]")
                print("  --registrations N  tokens in the store (default 1000000, 1 % invalid)")
                print("  --keep             leave the scratch stores in place")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        let directory = try RelayBenchSupport.scratch("clean-tokens")
        defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }
        let ours = directory + "/store.sqlite", baseline = directory + "/baseline.sqlite", bare = directory + "/bare.sqlite"

        print("clean-tokens: \(registrations) registrations, 1 % invalid; seeding…")
        let seedStart = Date()
        do {
            let db = try RelayBenchSupport.createStore(ours, job: job)
            let registeredAt: Int64 = 1_780_000_000_000
            try RegistrationSeeder.seed(database: db, storeKey: try RelayBenchSupport.storeKey(ours), devices: registrations / 2, tokensPerDevice: 2,
                                        registeredAt: registeredAt, triggeredAt: nil,
                                        deviceID: { String(format: "bench-device-%08d", $0) }, token: { String(format: "%08x%08x", $0, $1) + String(repeating: "ab", count: 24) },
                                        result: { i, j in
                                            let k = i * 2 + j
                                            if k % 100 == 0 { return k % 200 == 0 ? .badDeviceToken : .unregisteredAfterRegistration }
                                            if k % 1000 == 500 { return .unregisteredBeforeRegistration }
                                            return .delivered
                                        })
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        print("  seeded in \(RelayBenchSupport.format(Date().timeIntervalSince(seedStart))) s")
        try FileManager.default.copyItem(atPath: ours, toPath: baseline)
        try FileManager.default.copyItem(atPath: ours + ".key", toPath: baseline + ".key")
        try FileManager.default.copyItem(atPath: ours, toPath: bare)

        let bareSQL = """
            PRAGMA foreign_keys = ON;
            PRAGMA synchronous = FULL;
            PRAGMA busy_timeout = 10000;
            BEGIN IMMEDIATE;
            DELETE FROM relay_tokens
              WHERE result_reason IN ('BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken', 'PayloadTooLarge')
                AND (CASE WHEN invalidated_at IS NOT NULL THEN registered_at <= invalidated_at ELSE result_at >= registered_at END);
            SELECT changes();
            DELETE FROM relay_devices WHERE NOT EXISTS (SELECT 1 FROM relay_tokens t WHERE t.device_id = relay_devices.id);
            COMMIT;
            """
        let bareScript = directory + "/bare.sql"
        try bareSQL.write(toFile: bareScript, atomically: true, encoding: .utf8)
        let bareShell = try RelayBenchSupport.run("/usr/bin/sqlite3", [bare], stdinFile: bareScript)
        guard bareShell.status == 0 else { throw BenchFailure("sqlite3 (bare DELETE) failed: \(bareShell.stderr)") }
        let bareRemoved = bareShell.stdout.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? -1

        let environment = ["HOME": directory, "PATH": "/usr/bin:/bin"]
        let pass = try RelayBenchSupport.run(job, ["--store", ours, "--json", "clean-tokens"], environment: environment)
        guard pass.status == 0 else { throw BenchFailure("clean-tokens failed: \(pass.stderr)") }
        let removed = RelayBenchSupport.counts(pass.stdout)["removed"] ?? -1

        // The same work as plain SQL: the rule, the token deletion and the Device IDs left empty, one transaction.
        let sql = """
            PRAGMA foreign_keys = ON;
            PRAGMA synchronous = FULL;
            PRAGMA busy_timeout = 10000;
            BEGIN IMMEDIATE;
            CREATE TEMP TABLE gone AS SELECT id, device_id FROM relay_tokens
              WHERE result_reason IN ('BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken', 'PayloadTooLarge')
                AND (CASE WHEN invalidated_at IS NOT NULL THEN registered_at <= invalidated_at ELSE result_at >= registered_at END);
            DELETE FROM relay_tokens WHERE id IN (SELECT id FROM gone);
            DELETE FROM relay_devices WHERE id IN (SELECT device_id FROM gone) AND NOT EXISTS (SELECT 1 FROM relay_tokens t WHERE t.device_id = relay_devices.id);
            COMMIT;
            SELECT count(*) FROM temp.gone;
            """
        let script = directory + "/baseline.sql"
        try sql.write(toFile: script, atomically: true, encoding: .utf8)
        let shell = try RelayBenchSupport.run("/usr/bin/sqlite3", [baseline], stdinFile: script)
        guard shell.status == 0 else { throw BenchFailure("sqlite3 failed: \(shell.stderr)") }
        let baselineRemoved = shell.stdout.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? -1

        // Both stores must end identical in what they hold.
        let a = try Database(path: ours), b = try Database(path: baseline), c = try Database(path: bare)
        for query in ["SELECT count(*) FROM relay_tokens", "SELECT count(*) FROM relay_devices", "SELECT total(id) FROM relay_tokens"] {
            let x: Double? = try a.scalar(query), y: Double? = try b.scalar(query), z: Double? = try c.scalar(query)
            guard x == y, x == z else { throw BenchFailure("the stores differ after the pass (\(query))") }
        }
        print("  \("client".padding(toLength: 34, withPad: " ", startingAt: 0)) removed    seconds")
        print("  \("job clean-tokens (process)".padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(removed).padding(toLength: 10, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(pass.seconds, 3))")
        print("  \("sqlite3 shell, one transaction".padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(baselineRemoved).padding(toLength: 10, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(shell.seconds, 3))")
        print("  \("sqlite3 shell, bare DELETE".padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(bareRemoved).padding(toLength: 10, withPad: " ", startingAt: 0)) \(RelayBenchSupport.format(bareShell.seconds, 3))")
        print("  ratio job / sqlite3 temp-table: \(RelayBenchSupport.format(pass.seconds / shell.seconds, 2))×, job / bare DELETE: "
              + "\(RelayBenchSupport.format(pass.seconds / bareShell.seconds, 2))× (target ≤ 1.5×)")
    }
}
