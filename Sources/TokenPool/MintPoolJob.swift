import Cryptography
import Runner

/// `mint-pool`: mints the day-window ES256K token pool into its slots (seed §2, §3, §5).
struct MintPoolJob: Job {
    let name = "mint-pool"
    let summary = "mint the pool of day-window ES256K tokens for the active identity, one per UTC day from today"
    let schedule = Schedule.daily(hour: 0, minute: 15)
    let settingKeys = [TokenPoolSettings.poolSize, TokenPoolSettings.slackSeconds]

    func run(_ context: JobContext) throws -> JobResult {
        let size = try context.settings.int(TokenPoolSettings.poolSize)
        let slack = try context.settings.int(TokenPoolSettings.slackSeconds)
        // Validated when set; a value written into the table by other means is refused, not trusted.
        guard (2...100_000).contains(size), (0...DayWindow.maximumSlackSeconds).contains(slack) else {
            throw JobError.configuration("setting", "pool.size or pool.slack-seconds holds a value out of range; set it again with 'job settings set'")
        }
        let nowSeconds = PoolCalendar.floorDivide(context.nowMilliseconds, 1000)
        // As the app does: signed out, or a passkey identity (which cannot mint), leaves prefetch unconfigured —
        // a pass with nothing to do, not a failure; the pool is left as it is.
        switch try IdentityStore(database: context.database).active()?.method {
        case nil: return .skipped("no-identity")
        case .peer: return .skipped("unsupported-identity")
        case .ethr: break
        }

        if context.dryRun {
            let (_, plan) = try PoolMinting.plan(database: context.database, nowSeconds: nowSeconds, size: size)
            let existing = try PoolStore(database: context.database).live()
            var counts = Counts()
            counts["would_mint"] = plan.size
            counts["would_replace"] = existing?.plan.size ?? 0
            counts["days_left"] = existing.map { Self.daysLeft($0.plan, nowSeconds: nowSeconds) } ?? 0
            return .completed(counts, details: Self.details(plan))
        }

        let keyring = try context.keyring()
        let minting = PoolMinting(database: context.database, keyring: keyring, between: context.checkCancellation,
                                  progress: { context.progress(done: $0, total: $1) })
        let outcome = try minting.run(nowSeconds: nowSeconds, nowMilliseconds: context.nowMilliseconds, size: size, slackSeconds: slack)
        var counts = Counts()
        counts["minted"] = outcome.minted
        counts["replaced"] = outcome.replaced
        counts["purged"] = outcome.purged
        // Pool health for the metrics file: UTC days, today included, the live pool still has a token for.
        counts["days_left"] = Self.daysLeft(outcome.plan, nowSeconds: nowSeconds)
        return .completed(counts, details: Self.details(outcome.plan))
    }

    /// Days from today through the plan's last day (0 when it has run out).
    static func daysLeft(_ plan: PoolPlan, nowSeconds: Int64) -> Int {
        max(0, Int(plan.lastDay - PoolCalendar.floorDivide(nowSeconds, 86_400)) + 1)
    }

    static func details(_ plan: PoolPlan) -> [(String, JSON)] {
        [("first_day", .string(PoolCalendar.dateString(ofDay: plan.firstDay))),
         ("last_day", .string(PoolCalendar.dateString(ofDay: plan.lastDay))),
         ("today_slot", .number(PoolCalendar.slot(forDay: plan.firstDay, size: plan.size)))]
    }
}
