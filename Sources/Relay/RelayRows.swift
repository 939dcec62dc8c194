import Store

/// Sets of relay rows named in one statement by bound arguments, so the statement's text is the same whatever the
/// rows: it is prepared once per connection, and a batch of rows costs one statement (one round trip on
/// PostgreSQL), not one per row.
///
/// PostgreSQL takes the ids as an array: "`expression operator ANY (array expression)` … The result of ANY is
/// "true" if any true result is obtained." SQLite walks a JSON array: "The json_each(X) … table-valued function
/// walks the JSON value provided as its first argument and returns one row for each element."
/// Pairs go as two arrays on PostgreSQL ("`unnest(anyarray, anyarray [, ...])` … Expands multiple arrays (possibly
/// of different data types) into a set of rows") and as a JSON array of pairs on SQLite, joined with `UPDATE … FROM`.
enum RelayRows {
    /// `<column> is one of rows` and its argument.
    static func clause(_ db: Database, _ rows: [Int64], column: String = "id") -> (sql: String, argument: String) {
        let list = rows.map(String.init).joined(separator: ",")
        switch db.engine {
        case .postgresql: return ("\(column) = ANY(CAST(? AS bigint[]))", "{" + list + "}")
        case .sqlite: return ("\(column) IN (SELECT value FROM json_each(?))", "[" + list + "]")
        }
    }

    /// Sets `sent_at` to `to` on those of `rows` whose `sent_at` is still `from` (a compare-and-set on a stamp this
    /// pass holds); returns the rows it changed. One statement.
    static func moveStamps(_ db: Database, rows: [Int64], from: Int64, to: Int64?) throws -> Set<Int64> {
        guard !rows.isEmpty else { return [] }
        let (clause, argument) = clause(db, rows)
        return Set(try db.query("UPDATE relay_tokens SET sent_at = ? WHERE \(clause) AND sent_at = ? RETURNING id",
                                [to, argument, from]).map { try $0.get(0, as: Int64.self) })
    }

    /// Consumes the triggers the claim saw: on each Device ID of `devices` whose `last_trigger_at` is still the one seen
    /// (a trigger recorded since stays pending), `last_push_at` becomes the clock of the earliest pass that answered one
    /// of its tokens for that trigger: `at` for this pass's pushes, earlier for a token an earlier pass answered and
    /// that was therefore not pushed again (that pass stopped before consuming; `firstServingPush`). One statement.
    static func consumeTriggers(_ db: Database, devices: [(id: Int64, seenTrigger: Int64)], at: Int64) throws {
        guard !devices.isEmpty else { return }
        switch db.engine {
        case .postgresql:
            try db.execute("""
                UPDATE relay_devices SET last_push_at = \(Self.firstServingPush) FROM unnest(CAST(? AS bigint[]), CAST(? AS bigint[])) AS seen(id, trigger_at)
                WHERE relay_devices.id = seen.id AND relay_devices.last_trigger_at = seen.trigger_at
                """, [at, at, "{" + devices.map { String($0.id) }.joined(separator: ",") + "}",
                      "{" + devices.map { String($0.seenTrigger) }.joined(separator: ",") + "}"])
        case .sqlite:
            try db.execute("""
                UPDATE relay_devices SET last_push_at = \(Self.firstServingPush)
                FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS trigger_at FROM json_each(?)) AS seen
                WHERE relay_devices.id = seen.id AND relay_devices.last_trigger_at = seen.trigger_at
                """, [at, at, "[" + devices.map { "[\($0.id),\($0.seenTrigger)]" }.joined(separator: ",") + "]"])
        }
    }

    /// The push time a consumed trigger leaves (both `?` bound to the pass's clock): the earliest answer's pass clock
    /// (`result_at`) among the Device ID's tokens answered for the trigger seen (`seen.trigger_at`), when earlier
    /// than this pass's. The window must count from the push that served the trigger: counted from this pass's later
    /// clock, a trigger 30 s after that earlier push and less than 30 s after this pass would be debounced unpushed.
    private static let firstServingPush = """
        coalesce((SELECT min(t.result_at) FROM relay_tokens t WHERE t.device_id = relay_devices.id AND t.result_at >= seen.trigger_at
        AND t.result_at < ?), ?)
        """

    /// Consumes whatever trigger `devices` hold now, the one the claim saw or one recorded since: `last_push_at = at`
    /// on each Device ID of `devices` none of whose live tokens is missing from `pushedTokens` (the tokens this pass
    /// pushed to them; a token registered since, or one answered before the pass and so not pushed again, keeps the
    /// trigger pending). A push time stored later than `at` is kept. A trigger stored 30 s or more after `at` still
    /// counts (`WakeupDebounce.dueSQL`). One statement.
    static func consumeTriggersServed(_ db: Database, devices: [Int64], pushedTokens: [Int64], at: Int64) throws {
        guard !devices.isEmpty else { return }
        let (devicesClause, devicesArgument) = clause(db, devices, column: "relay_devices.id")
        let (tokensClause, tokensArgument) = clause(db, pushedTokens, column: "t.id")
        try db.execute("""
            UPDATE relay_devices SET last_push_at = ?
            WHERE \(devicesClause) AND last_trigger_at IS NOT NULL AND (last_push_at IS NULL OR last_push_at < ?)
            AND NOT EXISTS (SELECT 1 FROM relay_tokens t WHERE t.device_id = relay_devices.id AND NOT \(TokenCleanup.deadSQL("t")) AND NOT (\(tokensClause)))
            """, [at, devicesArgument, at, tokensArgument])
    }
}
