import Cryptography
import Store

/// Claims `send-wakeups` work: due Device IDs and the tokens to push for them, stamped (`sent_at`) in the same
/// short write transaction, so that passes running at once — on several hosts over one PostgreSQL store — split
/// the due Device IDs between them and never push a token twice within the debounce window.
///
/// On PostgreSQL the candidate rows are read `FOR UPDATE SKIP LOCKED`: "With SKIP LOCKED, any selected rows that
/// cannot be immediately locked are skipped", so a second pass takes the next Device IDs instead of waiting for
/// (or repeating) the first's. A token row locked `FOR UPDATE` is re-checked against the statement's conditions
/// once its lock is granted ("the WHERE condition is re-evaluated to see if the updated version of the row still
/// matches"), so a token another pass stamped meanwhile is left out; the stamp's own guard (`sent_at` still out of
/// the window) is the last word. On SQLite the write transaction already excludes every other writer.
///
/// A claim carries the time it was made: the stamp is the claim's end, `claimedAt + claimMilliseconds`, the last
/// instant its holder may hand the push to APNs. Another pass reads the window as passed only 30 s after that end,
/// so the claim expires long before; the holder renews it (`renew`, a compare-and-set on its own stamp) right
/// before each batch of pushes leaves and sends nothing on a claim it no longer holds. Once a push is answered its
/// stamp becomes the answer's time (`AnswerRecorder`), so the next window counts from when the push had arrived.
struct WakeupClaim {
    /// How long a claim holds: a push is handed to libcurl right after its claim was renewed and starts within
    /// `sendMarginMilliseconds` or not at all, so it reaches APNs before the claim ends.
    static let claimMilliseconds: Int64 = 15_000
    /// How soon after its claim was renewed a push must start being written (connection set up, a stream free on
    /// it), or it is abandoned unsent: the claim still has 5 s left when the last push may leave.
    static let sendMarginMilliseconds: Int64 = 10_000

    /// Device IDs claimed (their triggers are consumed once their pushes are answered).
    var devices: [Int64] = []
    /// The `last_trigger_at` each claimed Device ID had when claimed: only that trigger is consumed (a later one,
    /// even one stamped with an earlier clock by a slower writer, stays pending).
    var seenTriggers: [Int64: Int64] = [:]
    /// The highest Device ID the claim looked at (the next claim starts after it), claimed or not; nil when none was due.
    var lastScanned: Int64?
    /// Tokens claimed and stamped, opened and ready to push.
    var targets: [SendWakeupsJob.Target] = []
    /// Tokens whose sealed value this store key could not open (not stamped, not pushed).
    var unreadable = 0
    /// Tokens another pass stamped between this claim's read and its stamp (that pass pushes them, if it lives).
    var stampedElsewhere = Set<Int64>()

    /// Claims up to `limit` due Device IDs with ids above `after` (keyset order, so a Device ID with nothing
    /// left to push is not found again by the same pass), with their pushable tokens. One write transaction.
    /// `claimedAt` is the clock when the claim is made.
    static func devices(_ db: Database, keyring: StoreKeyring, claimedAt now: Int64, after: Int64, limit: Int, trailingPush: Bool) throws -> WakeupClaim {
        let dueSQL = WakeupDebounce.dueSQL(trailingPush: trailingPush)
        let window = now - WakeupDebounce.windowMilliseconds
        return try db.write { db in
            var claim = WakeupClaim()
            let locked: [Int64] = try db.query("""
                SELECT d.id FROM relay_devices d WHERE d.id > ? AND \(dueSQL) ORDER BY d.id LIMIT \(limit)\(skipLocked(db))
                """, [after, window, window]).map { try $0.get(0) }
            guard let last = locked.last else { return claim }
            claim.lastScanned = last
            // Checked again now that they are locked: a pass that claimed one of them committed its stamps after the
            // statement above took its snapshot but before it took the row's lock (a claim stamps tokens and leaves
            // the device row unchanged, so PostgreSQL does not re-check it), and that Device ID is no longer due.
            let due = try db.query("""
                SELECT d.id, d.last_trigger_at FROM relay_devices d WHERE d.id IN (\(locked.map(String.init).joined(separator: ","))) AND \(dueSQL) ORDER BY d.id
                """, [window, window])
            claim.devices = try due.map { try $0.get(0) }
            for row in due { claim.seenTriggers[try row.get(0, as: Int64.self)] = try row.get(1, as: Int64.self) }
            guard !claim.devices.isEmpty else { return claim }
            let list = claim.devices.map(String.init).joined(separator: ",")
            let rows = try db.query("""
                SELECT t.id, t.token_sealed, t.environment, t.sent_at, t.device_id FROM relay_tokens t JOIN relay_devices dd ON dd.id = t.device_id
                WHERE t.device_id IN (\(list)) AND \(WakeupDebounce.mayPushSQL("t"))
                AND NOT \(TokenCleanup.deadSQL("t"))
                AND NOT (t.retry_due = 0 AND t.result_at IS NOT NULL AND t.result_at >= dd.last_trigger_at)
                ORDER BY t.id\(skipLocked(db, of: "t"))
                """, [window])
            try claim.stamp(rows, db, keyring: keyring, now: now, window: window)
            if db.engine == .postgresql {
                // A Device ID's trigger is consumed only when each of its live tokens is pushed by this pass or already
                // answered for that trigger. A token another transaction held (an answer being recorded, a registration
                // refreshed: skipped by SKIP LOCKED), or one another pass stamped after this claim's first statement read
                // the Device ID as due (that pass may die before sending), leaves the trigger for a later pass.
                let claimed = Set(rows.compactMap { try? $0.get(0, as: Int64.self) }).subtracting(claim.stampedElsewhere)
                let unserved = Set(try db.query("""
                    SELECT t.id, t.device_id FROM relay_tokens t JOIN relay_devices dd ON dd.id = t.device_id
                    WHERE t.device_id IN (\(list)) AND NOT \(TokenCleanup.deadSQL("t"))
                    AND NOT (t.retry_due = 0 AND t.result_at IS NOT NULL AND t.result_at >= dd.last_trigger_at)
                    """).compactMap { row -> Int64? in
                    claimed.contains(try row.get(0, as: Int64.self)) ? nil : try row.get(1, as: Int64.self)
                })
                claim.devices.removeAll { unserved.contains($0) }
            }
            return claim
        }
    }

    /// Claims up to `limit` tokens with ids above `after` whose last push must be retried (429, 5xx, no answer),
    /// out of the debounce window and not dead. One write transaction; `lastToken` continues the walk.
    static func retries(_ db: Database, keyring: StoreKeyring, claimedAt now: Int64, after: Int64, limit: Int) throws -> (claim: WakeupClaim, lastToken: Int64?) {
        let window = now - WakeupDebounce.windowMilliseconds
        return try db.write { db in
            var claim = WakeupClaim()
            let rows = try db.query("""
                SELECT t.id, t.token_sealed, t.environment, t.sent_at, t.device_id FROM relay_tokens t
                WHERE t.id > ? AND t.retry_due = 1 AND \(WakeupDebounce.mayPushSQL("t")) AND NOT \(TokenCleanup.deadSQL("t"))
                ORDER BY t.id LIMIT \(limit)\(skipLocked(db))
                """, [after, window])
            try claim.stamp(rows, db, keyring: keyring, now: now, window: window)
            return (claim, try rows.last.map { try $0.get(0, as: Int64.self) })
        }
    }

    /// The relay's one engine-specific clause: PostgreSQL locks the claimed rows and skips those another pass
    /// holds; SQLite needs nothing (its write transaction excludes other writers).
    private static func skipLocked(_ db: Database, of table: String? = nil) -> String {
        guard db.engine == .postgresql else { return "" }
        return " FOR UPDATE" + (table.map { " OF \($0)" } ?? "") + " SKIP LOCKED"
    }

    /// Opens and stamps the token `rows` (id, sealed token, environment, sent_at, device_id): the stamp is the claim's end —
    /// it commits before the push leaves and holds the token for the claim and the window after it. One statement
    /// stamps the batch; its guard leaves out a token another pass stamped meanwhile.
    private mutating func stamp(_ rows: [Row], _ db: Database, keyring: StoreKeyring, now: Int64, window: Int64) throws {
        var opened: [SendWakeupsJob.Target] = []
        for row in rows {
            let id: Int64 = try row.get(0)
            let sealed: [UInt8] = try row.get(1)
            guard let value = try? keyring.open(sealed, purpose: Registry.tokenPurpose),
                  let environment = APNsEnvironment(rawValue: try row.get(2)) else { unreadable += 1; continue }
            opened.append(SendWakeupsJob.Target(tokenRow: id, token: String(decoding: value.copyBytes(), as: UTF8.self),
                                                environment: environment, device: try row.get(4), previousSentAt: try row.get(3),
                                                stamp: now + Self.claimMilliseconds))
        }
        guard !opened.isEmpty else { return }
        let (rowsClause, rowsArgument) = RelayRows.clause(db, opened.map(\.tokenRow))
        let stamped = Set(try db.query("""
            UPDATE relay_tokens SET sent_at = ? WHERE \(rowsClause) AND \(WakeupDebounce.mayPushSQL()) RETURNING id
            """, [now + Self.claimMilliseconds, rowsArgument, window]).map { try $0.get(0, as: Int64.self) })
        targets += opened.filter { stamped.contains($0.tokenRow) }
        stampedElsewhere.formUnion(opened.map(\.tokenRow).filter { !stamped.contains($0) })
    }

    /// Renews the claims on `rows` held with `stamp` (tokens stamped by this pass and not answered since) to end at
    /// `renewedAt + claimMilliseconds`: a compare-and-set, so a token whose claim another pass took meanwhile (its
    /// stamp changed) is left out. Returns the token rows still held. One write transaction.
    static func renew(_ db: Database, rows: [Int64], stamp: Int64, renewedAt: Int64) throws -> Set<Int64> {
        guard !rows.isEmpty else { return [] }
        return try db.write { db in try RelayRows.moveStamps(db, rows: rows, from: stamp, to: renewedAt + claimMilliseconds) }
    }
}
