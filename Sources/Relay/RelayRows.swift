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

    /// Consumes the triggers the claim saw, on each Device ID of `devices` whose `last_trigger_at` is still the one
    /// seen (a trigger recorded since stays pending). `last_push_at` is only ever set to the clock of a pass that
    /// pushed that Device ID: the earliest pass that answered one of its tokens for that trigger — `at` when this pass
    /// did (`pushed`: APNs answered one of its pushes to the Device ID), earlier for a token an earlier pass answered
    /// and that was therefore not pushed again (that pass stopped before consuming; `servingPush`). A Device ID this
    /// pass did not push and no pass answered for that trigger (its claim was lost to another pass, or its pushes got
    /// no answer: a transport failure, retried) keeps its trigger pending, so its window never counts from a push
    /// that was not made. A Device ID with no live token has nothing to push and is consumed at `at`. One statement.
    static func consumeTriggers(_ db: Database, devices: [(id: Int64, seenTrigger: Int64, pushed: Bool)], at: Int64) throws {
        guard !devices.isEmpty else { return }
        let value = "coalesce(\(Self.servingPush), CASE WHEN seen.pushed = 1 OR \(Self.noLiveToken) THEN ? END)"
        switch db.engine {
        case .postgresql:
            try db.execute("""
                UPDATE relay_devices SET last_push_at = \(value)
                FROM unnest(CAST(? AS bigint[]), CAST(? AS bigint[]), CAST(? AS int[])) AS seen(id, trigger_at, pushed)
                WHERE relay_devices.id = seen.id AND relay_devices.last_trigger_at = seen.trigger_at AND \(value) IS NOT NULL
                """, [at, at, "{" + devices.map { String($0.id) }.joined(separator: ",") + "}",
                      "{" + devices.map { String($0.seenTrigger) }.joined(separator: ",") + "}",
                      "{" + devices.map { $0.pushed ? "1" : "0" }.joined(separator: ",") + "}", at, at])
        case .sqlite:
            try db.execute("""
                UPDATE relay_devices SET last_push_at = \(value)
                FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS trigger_at, json_extract(value, '$[2]') AS pushed
                      FROM json_each(?)) AS seen
                WHERE relay_devices.id = seen.id AND relay_devices.last_trigger_at = seen.trigger_at AND \(value) IS NOT NULL
                """, [at, at, "[" + devices.map { "[\($0.id),\($0.seenTrigger),\($0.pushed ? 1 : 0)]" }.joined(separator: ",") + "]", at, at])
        }
    }

    /// The earliest answer's pass clock (`result_at`) among the Device ID's tokens answered for the trigger seen
    /// (`seen.trigger_at`), when earlier than this pass's (`?`, the pass's clock); NULL when there is none. The window
    /// must count from the push that served the trigger: counted from this pass's later clock, a trigger 30 s after
    /// that earlier push and less than 30 s after this pass would be debounced unpushed.
    private static let servingPush = """
        (SELECT min(t.result_at) FROM relay_tokens t WHERE t.device_id = relay_devices.id AND t.result_at >= seen.trigger_at AND t.result_at < ?)
        """

    /// The Device ID has no live token (none to push).
    private static var noLiveToken: String {
        "NOT EXISTS (SELECT 1 FROM relay_tokens l WHERE l.device_id = relay_devices.id AND NOT \(TokenCleanup.deadSQL("l")))"
    }

    /// Consumes whatever trigger `devices` hold now, the one the claim saw or one recorded since: `last_push_at = at`
    /// on each Device ID of `devices` none of whose live tokens is missing from `pushedTokens` (the tokens this pass
    /// pushed to them and APNs answered; a token registered since, or one answered before the pass and so not pushed again, keeps the
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
