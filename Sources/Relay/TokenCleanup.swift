import Runner
import Store

/// The rule `clean-tokens` applies, as a pure function and as the equivalent SQL, plus the batched delete.
///
/// A token is removed when its latest recorded APNs result says it is dead (`BadDeviceToken`,
/// `DeviceTokenNotForTopic`, `Unregistered`, `ExpiredToken`, `PayloadTooLarge`) and that verdict is newer than its latest
/// registration: for a 410, APNs's own `timestamp` (when it learned the token was invalid) must not be
/// earlier than the registration time — the 410 is delayed by design and a token provisioned again since is
/// live; for the others, the result must have been recorded at or after the registration.
package enum TokenCleanup {
    /// Rows deleted per write transaction (docs/design.md §4).
    static let batchSize = 1000

    /// Pure form of the rule: the test oracle only. Production runs `removableSQL`/`deadSQL`; RelayRuleOracleTests
    /// checks over a grid of inputs that SQLite's answer to that SQL is this function's.
    package static func shouldRemove(reason: String?, resultAt: Int64?, invalidatedAt: Int64?, registeredAt: Int64) -> Bool {
        guard let reason, APNsResponseAction.invalidTokenReasons.contains(reason) else { return false }
        if let invalidatedAt { return registeredAt <= invalidatedAt }
        guard let resultAt else { return false }
        return resultAt >= registeredAt
    }

    /// The reason filter, written exactly as the partial index `relay_tokens_invalid` so SQLite uses it.
    static let invalidReasonsSQL = "result_reason IN ('BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken', 'PayloadTooLarge')"

    /// The token is dead by this rule: `send-wakeups` never pushes it (it waits for `clean-tokens`). NULL-safe, so
    /// it can be negated.
    static func deadSQL(_ alias: String = "") -> String { "coalesce((\(removableSQL(alias))), FALSE)" }

    /// The whole rule as an SQL condition on `relay_tokens` (columns qualified with `alias` when given).
    static func removableSQL(_ alias: String = "") -> String {
        let p = alias.isEmpty ? "" : alias + "."
        return "\(p)result_reason IN ('BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken', 'PayloadTooLarge') AND "
            + "(CASE WHEN \(p)invalidated_at IS NOT NULL THEN \(p)registered_at <= \(p)invalidated_at ELSE \(p)result_at >= \(p)registered_at END)"
    }

    /// What a cleanup pass did.
    struct Tally {
        var removed = 0
        var devicesRemoved = 0
        var keptReregistered = 0
    }

    /// Counts what `run` would remove, changing nothing.
    static func preview(_ db: Database) throws -> Tally {
        try db.read { db in
            var tally = Tally()
            tally.removed = try db.scalar("SELECT count(*) FROM relay_tokens WHERE \(removableSQL())") ?? 0
            let invalid: Int = try db.scalar("SELECT count(*) FROM relay_tokens WHERE \(invalidReasonsSQL)") ?? 0
            tally.keptReregistered = invalid - tally.removed
            tally.devicesRemoved = try db.scalar("""
                SELECT count(DISTINCT t.device_id) FROM relay_tokens t WHERE \(removableSQL("t"))
                AND NOT EXISTS (SELECT 1 FROM relay_tokens u WHERE u.device_id = t.device_id AND NOT coalesce((\(removableSQL("u"))), FALSE))
                """) ?? 0
            return tally
        }
    }

    /// Deletes removable tokens in batches of `batchSize` (walking the id order once, so tokens kept by the
    /// timestamp rule are not rescanned), and Device IDs left without a token. Idempotent: a pass stopped
    /// anywhere and run again removes exactly the rest. `committed` gets the running tally after each batch commits.
    static func run(_ db: Database, checkCancellation: () throws -> Void, committed: (Tally) -> Void = { _ in }) throws -> Tally {
        var tally = Tally()
        var cursor: Int64 = 0
        while true {
            try checkCancellation()
            let (deleted, devices, last) = try db.write { db -> (Int, Int, Int64) in
                var count = 0
                var last = cursor
                var deviceIDs = Set<Int64>()
                try db.forEachRow("""
                    DELETE FROM relay_tokens WHERE id IN (
                        SELECT id FROM relay_tokens WHERE \(removableSQL()) AND id > ? ORDER BY id LIMIT \(batchSize))
                    RETURNING id, device_id
                    """, [cursor]) { row in
                    count += 1
                    last = max(last, try row.get(0, as: Int64.self))
                    deviceIDs.insert(try row.get(1, as: Int64.self))
                }
                var devices = 0
                for device in deviceIDs {
                    devices += try db.execute("DELETE FROM relay_devices WHERE id = ? AND NOT EXISTS (SELECT 1 FROM relay_tokens WHERE device_id = ?)", [device, device])
                }
                return (count, devices, last)
            }
            tally.removed += deleted
            tally.devicesRemoved += devices
            committed(tally)
            guard deleted == batchSize else { break }
            cursor = last
        }
        tally.keptReregistered = try db.scalar("SELECT count(*) FROM relay_tokens WHERE \(invalidReasonsSQL)") ?? 0
        return tally
    }
}
