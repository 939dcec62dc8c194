import Cryptography
import Runner
import Store

/// One mint pass over the store (docs/protocols/jwt-pool.md §5): a fresh pool of `size` day tokens starting today, swapped in atomically.
///
/// Steps: purge what an earlier pass left (abandoned staging and retired generations); open the active identity's
/// key once; sign and seal the tokens outside any transaction and write them into a staging generation in batches
/// of at most 1,000, the last batch in the same transaction that replaces the live pool with the new one; then the
/// old pool's rows are purged in batches. A pool of up to 1,000 tokens is thus one transaction plus the purge. Killed anywhere, the live pool is the old one or the new one, never a mix; the next pass
/// purges the leftovers and mints again, reaching the same end state.
package struct PoolMinting {
    package struct Outcome: Sendable {
        package let plan: PoolPlan
        package let minted: Int
        /// Slots of the pool it replaced (0 if none).
        package let replaced: Int
        /// Token rows deleted (left-overs and the replaced pool).
        package let purged: Int
    }

    let database: Database
    let keyring: StoreKeyring
    /// Called between batches: cancellation and lease renewal.
    let between: () throws -> Void
    /// Called after each batch with (tokens done, total).
    let progress: (Int, Int) -> Void

    package init(database: Database, keyring: StoreKeyring, between: @escaping () throws -> Void = {}, progress: @escaping (Int, Int) -> Void = { _, _ in }) {
        self.database = database
        self.keyring = keyring
        self.between = between
        self.progress = progress
    }

    /// The plan a pass at `nowSeconds` would mint, after checking an identity that can mint is active.
    package static func plan(database: Database, nowSeconds: Int64, size: Int) throws -> (IdentityStore.Identity, PoolPlan) {
        guard let identity = try IdentityStore(database: database).active() else { throw TokenPoolErrors.noIdentity }
        guard identity.method == .ethr else { throw TokenPoolErrors.unsupportedIdentity }
        return (identity, PoolPlan(firstDay: PoolCalendar.epochDay(unixSeconds: nowSeconds), size: size))
    }

    /// Mints and installs a pool of `size` tokens for the days from `nowSeconds`'s day on, `slackSeconds` wide.
    package func run(nowSeconds: Int64, nowMilliseconds: Int64, size: Int, slackSeconds: Int) throws -> Outcome {
        let (identity, plan) = try Self.plan(database: database, nowSeconds: nowSeconds, size: size)
        let pool = PoolStore(database: database)
        var purged = try pool.purge(includingStaging: true, between: between)

        // The identity's key is decrypted once for the whole pass and reused for every signature.
        let minter = DayTokenMinter(key: try IdentityStore(database: database).openKey(of: identity, keyring: keyring))
        let staging = PoolStore.Staging(identityID: identity.id, plan: plan, slackSeconds: slackSeconds, issuedAt: nowSeconds * 1000, now: nowMilliseconds,
                                        sealContext: try PoolSealing.newContext())
        var generation: Int64?
        var replaced = 0
        var batch: [PoolStore.NewSlot] = []
        batch.reserveCapacity(min(plan.size, PoolStore.batchSize))
        var done = 0
        for day in plan.days {
            let window = DayWindow(day: day, slackSeconds: slackSeconds)
            let token = Array(try minter.token(for: window, issuedAt: nowSeconds).utf8)
            let slot = PoolCalendar.slot(forDay: day, size: plan.size)
            batch.append(PoolStore.NewSlot(slot: slot, window: window,
                                           sealedToken: try PoolSealing.seal(token, did: identity.did, context: staging.sealContext, slot: slot, day: day, keyring: keyring),
                                           tokenIndex: keyring.blindIndex(token, purpose: PoolStore.tokenPurpose)))
            guard batch.count == PoolStore.batchSize || day == plan.lastDay else { continue }
            try between()
            let last = day == plan.lastDay
            do {
                // The last batch and the swap share one transaction: the new pool goes live complete, or not at all.
                let written = try pool.write(batch, into: generation, staging: staging, promote: last)
                generation = written.generationID
                replaced = written.replaced ?? 0
            } catch PoolStore.PromotionFailure.identityChanged {
                if let generation { try pool.retireStaging(generation) }
                _ = try? pool.purge(includingStaging: false, between: between)
                throw JobError.transient("identity-changed", "the active identity changed during the pass; nothing was installed, the next pass mints for the new identity")
            } catch PoolStore.PromotionFailure.incomplete {
                throw JobError.transient("pool-incomplete", "the new pool was altered while it was written; nothing was installed, the next pass mints again")
            }
            done += batch.count
            batch.removeAll(keepingCapacity: true)
            progress(done, plan.size)
        }

        purged += try pool.purge(includingStaging: false, between: between)
        return Outcome(plan: plan, minted: plan.size, replaced: replaced, purged: purged)
    }
}
