import Store

/// The record of background fetches (`token_pool_fetches`): outcome, HTTP status, rows and `hitLimit`.
///
/// Holds no token, URL, plan id or response body. The latest `retained` rows are kept.
package struct FetchLog {
    static let retained = 100

    /// One recorded fetch.
    package struct Entry: Sendable, Equatable {
        package let fetchedAt: Int64
        package let day: Int64
        package let slot: Int?
        /// `ok`, `no-credential`, `credential-rejected`, `refused`, `transient`, `bad-response`.
        package let outcome: String
        package let httpStatus: Int?
        package let rows: Int?
        package let hitLimit: Bool?
        /// From a `Retry-After`: no request before this instant (Unix ms).
        package var retryNotBefore: Int64? = nil
    }

    let database: Database

    package init(database: Database) { self.database = database }

    /// Appends `entry` and prunes beyond the retained rows, in one transaction.
    package func record(_ entry: Entry) throws {
        try database.write { db in
            _ = try db.execute("""
                INSERT INTO token_pool_fetches (fetched_at, day, slot, outcome, http_status, row_count, hit_limit, retry_not_before)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, [entry.fetchedAt, entry.day, entry.slot, entry.outcome, entry.httpStatus, entry.rows, entry.hitLimit, entry.retryNotBefore])
            _ = try db.execute("DELETE FROM token_pool_fetches WHERE id <= (SELECT max(id) FROM token_pool_fetches) - ?", [Self.retained])
        }
    }

    /// The instant before which Endorser asked not to be asked again (the latest `Retry-After`), if it is after `now`.
    package func backOff(after now: Int64) throws -> Int64? {
        let until: Int64? = try database.scalar("SELECT retry_not_before FROM token_pool_fetches WHERE retry_not_before IS NOT NULL ORDER BY id DESC LIMIT 1")
        return until.flatMap { $0 > now ? $0 : nil }
    }

    /// The latest fetch, if any.
    package func latest() throws -> Entry? {
        try database.queryOne("""
            SELECT fetched_at, day, slot, outcome, http_status, row_count, hit_limit FROM token_pool_fetches ORDER BY id DESC LIMIT 1
            """).map { row in
            Entry(fetchedAt: try row.get(0), day: try row.get(1), slot: try row.get(2), outcome: try row.get(3),
                  httpStatus: try row.get(4), rows: try row.get(5), hitLimit: try row.get(6))
        }
    }
}
