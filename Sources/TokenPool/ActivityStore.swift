import Cryptography
import Runner
import Store

/// What background prefetch found (`token_pool_activity`) and the paging state of the question it asks.
///
/// Each row is sealed (purpose `token-pool-activity`): rows carry plan ids, DIDs and names. A blind index of the
/// row's `jwtId` (or of the whole row when it has none) keeps one copy of a row fetched twice. The latest
/// `retained` rows are kept. The cursor's after-id is the `prefetch.after-id` setting itself, moved forward when a
/// round completes; a round in progress is in `token_pool_prefetch_paging`.
package struct ActivityStore {
    static let purpose = "token-pool-activity"
    static let retained = 1000

    let database: Database

    package init(database: Database) { self.database = database }

    /// A kept row with when it was fetched.
    package struct Entry: Sendable {
        package let row: ActivityRow
        package let fetchedAt: Int64
    }

    /// The cursor for a round starting at `afterID` (the setting): the paging state if it belongs to that round.
    package func cursor(afterID: String) throws -> PrefetchCursor {
        guard let row = try database.queryOne("SELECT after_id, before_id, newest_id FROM token_pool_prefetch_paging") else {
            return PrefetchCursor(afterID: afterID)
        }
        let roundAfter: String = try row.get(0)
        guard roundAfter == afterID else { return PrefetchCursor(afterID: afterID) }
        return PrefetchCursor(afterID: afterID, beforeID: try row.get(1), newestID: try row.get(2))
    }

    /// Stores `rows` sealed and saves `cursor` (moving `prefetch.after-id` when a round completed), in one
    /// transaction. Returns how many rows were new.
    package func keep(_ rows: [ActivityRow], cursor: PrefetchCursor, previous: PrefetchCursor, settings: Settings, keyring: StoreKeyring, now: Int64) throws -> Int {
        let sealed = try rows.map { row in
            (index: keyring.blindIndex(row.jwtID.map { Array($0.utf8) } ?? row.json, purpose: Self.purpose),
             sealed: try keyring.seal(row.json, purpose: Self.purpose))
        }
        return try database.write { db in
            var added = 0
            for entry in sealed {
                added += try db.execute("INSERT INTO token_pool_activity (row_index, sealed_row, fetched_at) VALUES (?, ?, ?) ON CONFLICT (row_index) DO NOTHING",
                                        [entry.index, entry.sealed, now])
            }
            _ = try db.execute("DELETE FROM token_pool_activity WHERE id <= (SELECT max(id) FROM token_pool_activity) - ?", [Self.retained])
            if let before = cursor.beforeID {
                _ = try db.execute("""
                    INSERT INTO token_pool_prefetch_paging (singleton, after_id, before_id, newest_id) VALUES (1, ?, ?, ?)
                    ON CONFLICT (singleton) DO UPDATE SET after_id = excluded.after_id, before_id = excluded.before_id, newest_id = excluded.newest_id
                    """, [cursor.afterID, before, cursor.newestID ?? cursor.afterID])
            } else {
                _ = try db.execute("DELETE FROM token_pool_prefetch_paging", [])
            }
            if cursor.afterID != previous.afterID { try settings.set(TokenPoolSettings.afterID, cursor.afterID, now: now) }
            return added
        }
    }

    /// Every kept row, newest plan change first (by `jwtId`, then most recently fetched).
    package func all(keyring: StoreKeyring) throws -> [Entry] {
        var entries: [Entry] = []
        try database.forEachRow("SELECT sealed_row, fetched_at FROM token_pool_activity ORDER BY id DESC") { row in
            let opened: SecretBytes
            do { opened = try keyring.open(try row.get(0), purpose: Self.purpose) } catch {
                throw JobError.badInput("activity-unreadable", "a kept activity row does not open with this store key")
            }
            guard let parsed = ActivityRow(json: opened.copyBytes()) else { throw JobError.internal("a kept activity row is not JSON") }
            entries.append(Entry(row: parsed, fetchedAt: try row.get(1)))
        }
        return entries.enumerated().sorted { a, b in
            let (x, y) = (a.element.row.jwtID ?? "", b.element.row.jwtID ?? "")
            return x != y ? x > y : a.offset < b.offset
        }.map(\.element)
    }
}
