import Runner
import Store

/// Stored times ahead of the clock: after the clock went backwards, a `last_push_at`, `sent_at` or
/// `last_sent_at` in the future would hold wake-ups back until the clock passed it again. Such a time is treated
/// as now and stored as now, and the repair is logged once (`clock.stored_time_in_future`, no identifiers; the
/// next pass finds nothing to repair, so it is not logged again).
///
/// Times at most `toleranceMilliseconds` ahead are no sign of a clock that went backwards: on a PostgreSQL store
/// several hosts write at once, and a pass's `now` (read when it started) is always a little behind what other
/// passes and `serve-relay` wrote since. Moving those back would undo their order — an answer stamped after a newer
/// trigger, a trigger no newer than its push — and lose the trigger.
enum StoredClock {
    /// Rows changed per write transaction (docs/design.md §4).
    static let batchSize = 1000
    /// How far ahead of a pass's clock another writer's times may be before they count as in the future.
    static let toleranceMilliseconds: Int64 = 60_000

    /// The relay's own times (not APNs's 410 `timestamp`, which is Apple's clock): every one above `now` becomes
    /// `now`, except that a Device ID whose trigger was pending stays pending (its push time becomes `now - 1`),
    /// and a cached provider token minted "in the future" is dropped (its `iat` would be refused, and the re-mint
    /// rule would keep it until the clock passed it), so the pass mints a fresh one. Returns the number of rows changed.
    static func clampRelay(_ db: Database, now: Int64, checkCancellation: () throws -> Void) throws -> Int {
        // Only a time beyond the tolerance shows the clock went backwards; then every time ahead of now is repaired.
        let beyond = now + toleranceMilliseconds
        let ahead: Int = try db.scalar("""
            SELECT (SELECT count(*) FROM (SELECT 1 FROM relay_devices WHERE last_push_at > ?1 OR last_trigger_at > ?1 LIMIT 1) d)
                 + (SELECT count(*) FROM (SELECT 1 FROM relay_tokens WHERE sent_at > ?1 OR result_at > ?1 OR registered_at > ?1 LIMIT 1) t)
                 + (SELECT count(*) FROM relay_provider_token WHERE minted_at > ?1)
            """, [beyond]) ?? 0
        guard ahead > 0 else { return 0 }
        let statements: [(sql: String, arguments: [any DatabaseValueConvertible])] = [
            ("""
             UPDATE relay_devices SET
                 last_push_at = CASE WHEN last_push_at IS NULL THEN NULL
                                     WHEN last_trigger_at > last_push_at AND last_push_at >= ?1 THEN ?1 - 1
                                     WHEN last_push_at > ?1 THEN ?1 ELSE last_push_at END,
                 last_trigger_at = CASE WHEN last_trigger_at > ?1 THEN ?1 ELSE last_trigger_at END
             WHERE id IN (SELECT id FROM relay_devices WHERE last_push_at > ?1 UNION SELECT id FROM relay_devices WHERE last_trigger_at > ?1
                          LIMIT \(Self.batchSize))
             """, [now]),
            ("UPDATE relay_tokens SET sent_at = ?1 WHERE id IN (SELECT id FROM relay_tokens WHERE sent_at > ?1 LIMIT \(Self.batchSize))", [now]),
            ("UPDATE relay_tokens SET result_at = ?1 WHERE id IN (SELECT id FROM relay_tokens WHERE result_at > ?1 LIMIT \(Self.batchSize))", [now]),
            ("UPDATE relay_tokens SET registered_at = ?1 WHERE id IN (SELECT id FROM relay_tokens WHERE registered_at > ?1 LIMIT \(Self.batchSize))", [now]),
            ("DELETE FROM relay_provider_token WHERE minted_at > ?1", [now]),
        ]
        var changed = 0
        for statement in statements {
            while true {
                try checkCancellation()
                let updated = try db.write { db in try db.execute(statement.sql, statement.arguments) }
                changed += updated
                if updated < Self.batchSize { break }
            }
        }
        return changed
    }
}
