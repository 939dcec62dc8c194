import Runner
import Store

/// The pool's rows: generations (`staging` → `live` → `retired`) and their sealed tokens, one per slot.
///
/// Only the `live` generation is ever read by the fetcher side, and it changes in one transaction, so a reader
/// sees a whole pool or none. Writes are at most `batchSize` rows per transaction (docs/design.md §4).
package struct PoolStore {
    /// Rows per write transaction.
    package static let batchSize = 1000
    static let tokenPurpose = "token-pool-jwt"

    let database: Database

    package init(database: Database) { self.database = database }

    /// The live pool's description (no tokens).
    package struct LivePool: Sendable, Equatable {
        package let generationID: Int64
        package let identityID: Int64
        package let did: String
        package let plan: PoolPlan
        package let slackSeconds: Int
        /// `iat` of its tokens, Unix ms.
        package let issuedAt: Int64
        /// When it replaced the previous pool, Unix ms.
        package let liveAt: Int64
        /// The seal context bound into its tokens (`PoolSealing`); nil for a legacy pool sealed without it.
        package let sealContext: [UInt8]?
    }

    /// One slot's record (the token stays sealed).
    package struct SlotRecord: Sendable {
        package let slot: Int
        package let window: DayWindow
        package let sealedToken: [UInt8]
    }

    /// A slot ready to be written into a staging generation.
    package struct NewSlot: Sendable {
        package let slot: Int
        package let window: DayWindow
        package let sealedToken: [UInt8]
        package let tokenIndex: [UInt8]
    }

    /// The live pool, if there is one.
    package func live() throws -> LivePool? {
        try database.queryOne("""
            SELECT g.id, g.identity_id, i.did, g.first_day, g.size, g.slack_seconds, g.issued_at, g.live_at, g.seal_context
            FROM token_pool_generations g JOIN token_pool_identities i ON i.id = g.identity_id
            WHERE g.state = 'live'
            """).map { row in
            LivePool(generationID: try row.get(0), identityID: try row.get(1), did: try row.get(2),
                     plan: PoolPlan(firstDay: try row.get(3), size: try row.get(4)), slackSeconds: try row.get(5),
                     issuedAt: try row.get(6), liveAt: try row.get(7, as: Int64?.self) ?? 0, sealContext: try row.get(8, as: [UInt8]?.self))
        }
    }

    /// Every slot of `generationID`, in slot order.
    package func slots(of generationID: Int64) throws -> [SlotRecord] {
        var records: [SlotRecord] = []
        try database.forEachRow("""
            SELECT slot, day, not_before_at, expires_at, sealed_token FROM token_pool_slots WHERE generation_id = ? ORDER BY slot
            """, [generationID]) { row in
            records.append(try Self.record(row))
        }
        return records
    }

    /// One slot of `generationID`.
    package func slot(_ slot: Int, of generationID: Int64) throws -> SlotRecord? {
        try database.queryOne("""
            SELECT slot, day, not_before_at, expires_at, sealed_token FROM token_pool_slots WHERE generation_id = ? AND slot = ?
            """, [generationID, slot]).map(Self.record)
    }

    /// What a staging generation is created with.
    package struct Staging: Sendable {
        package let identityID: Int64
        package let plan: PoolPlan
        package let slackSeconds: Int
        /// `iat` of the tokens, Unix ms.
        package let issuedAt: Int64
        package let now: Int64
        /// The generation's seal context (`PoolSealing.newContext()`), bound into every token's associated data.
        package let sealContext: [UInt8]

        package init(identityID: Int64, plan: PoolPlan, slackSeconds: Int, issuedAt: Int64, now: Int64, sealContext: [UInt8]) {
            self.identityID = identityID
            self.plan = plan
            self.slackSeconds = slackSeconds
            self.issuedAt = issuedAt
            self.now = now
            self.sealContext = sealContext
        }
    }

    /// Why a staging generation could not go live.
    package enum PromotionFailure: Error { case identityChanged, incomplete }

    /// Writes one batch of at most `batchSize` slots in one transaction, creating the staging generation first
    /// when `generationID` is nil. With `promote`, the same transaction then checks that the generation is complete
    /// and its identity still active, retires the live pool and makes this one live — the atomic swap.
    /// Returns the generation id and, when promoted, the retired pool's slot count.
    package func write(_ slots: [NewSlot], into generationID: Int64?, staging: Staging, promote: Bool) throws -> (generationID: Int64, replaced: Int?) {
        precondition(slots.count <= Self.batchSize, "a batch holds at most batchSize rows")
        return try database.write { db in
            let generation: Int64
            if let generationID {
                generation = generationID
            } else {
                _ = try db.execute("""
                    INSERT INTO token_pool_generations (identity_id, state, first_day, size, slack_seconds, issued_at, created_at, seal_context)
                    VALUES (?, 'staging', ?, ?, ?, ?, ?, ?)
                    """, [staging.identityID, staging.plan.firstDay, staging.plan.size, staging.slackSeconds, staging.issuedAt, staging.now,
                          staging.sealContext])
                generation = db.lastInsertRowID
            }
            for slot in slots {
                // execute(_:_:) reuses one prepared statement for the whole batch.
                _ = try db.execute("""
                    INSERT INTO token_pool_slots (generation_id, slot, day, not_before_at, expires_at, sealed_token, token_index)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, [generation, slot.slot, slot.window.day, slot.window.notBefore * 1000, slot.window.expires * 1000,
                          slot.sealedToken, slot.tokenIndex])
            }
            guard promote else { return (generation, nil) }
            let active: Int64? = try db.scalar("SELECT identity_id FROM token_pool_active_identity")
            guard active == staging.identityID else { throw PromotionFailure.identityChanged }
            let state: String? = try db.scalar("SELECT state FROM token_pool_generations WHERE id = ?", [generation])
            let count: Int = try db.scalar("SELECT count(*) FROM token_pool_slots WHERE generation_id = ?", [generation]) ?? 0
            guard state == "staging", count == staging.plan.size else { throw PromotionFailure.incomplete }
            let retired = try retireLive()
            _ = try db.execute("UPDATE token_pool_generations SET state = 'live', live_at = ? WHERE id = ?", [staging.now, generation])
            return (generation, retired)
        }
    }

    /// Marks the live pool retired (the caller's transaction, or its own); returns its slot count (0 if none).
    /// From this moment no reader finds it; its rows are purged by `purge`.
    @discardableResult
    package func retireLive() throws -> Int {
        try database.writeIfNeeded { db in
            guard let live = try live() else { return 0 }
            _ = try db.execute("UPDATE token_pool_generations SET state = 'retired' WHERE id = ?", [live.generationID])
            return live.plan.size
        }
    }

    /// Marks a staging generation retired (an abandoned or refused pass).
    package func retireStaging(_ generationID: Int64) throws {
        try database.write { db in
            _ = try db.execute("UPDATE token_pool_generations SET state = 'retired' WHERE id = ? AND state = 'staging'", [generationID])
        }
    }

    /// Deletes the rows of retired generations (and, when `includingStaging`, of staging ones — only the mint
    /// pass, which holds the lease, may do that) in transactions of at most `batchSize` rows, calling
    /// `between` before each; the emptied generation rows go with the last batch. Returns the token rows deleted.
    @discardableResult
    package func purge(includingStaging: Bool, between: () throws -> Void = {}) throws -> Int {
        let states = includingStaging ? "('retired', 'staging')" : "('retired')"
        let pending: Int = try database.scalar("SELECT count(*) FROM token_pool_generations WHERE state IN \(states)") ?? 0
        guard pending > 0 else { return 0 }
        var deleted = 0
        while true {
            try between()
            let removed = try database.write { db -> Int in
                if includingStaging { _ = try db.execute("UPDATE token_pool_generations SET state = 'retired' WHERE state = 'staging'", []) }
                let removed = try db.execute("""
                    DELETE FROM token_pool_slots WHERE (generation_id, slot) IN (
                        SELECT s.generation_id, s.slot FROM token_pool_slots s JOIN token_pool_generations g ON g.id = s.generation_id
                        WHERE g.state = 'retired' LIMIT \(Self.batchSize))
                    """, [])
                if removed < Self.batchSize {
                    _ = try db.execute("""
                        DELETE FROM token_pool_generations WHERE state = 'retired'
                        AND NOT EXISTS (SELECT 1 FROM token_pool_slots s WHERE s.generation_id = token_pool_generations.id)
                        """, [])
                }
                return removed
            }
            deleted += removed
            if removed < Self.batchSize { break }
        }
        return deleted
    }

    private static func record(_ row: Row) throws -> SlotRecord {
        let day: Int64 = try row.get(1)
        let notBefore: Int64 = try row.get(2)
        let expires: Int64 = try row.get(3)
        return SlotRecord(slot: try row.get(0), window: DayWindow(day: day, notBefore: notBefore / 1000, expires: expires / 1000),
                          sealedToken: try row.get(4))
    }
}
