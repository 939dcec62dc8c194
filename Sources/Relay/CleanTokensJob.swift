import Runner

/// `clean-tokens`: removes APNs tokens whose latest recorded result says they are dead (see `TokenCleanup`).
struct CleanTokensJob: Job {
    let runsOnPostgreSQL = true
    let name = "clean-tokens"
    let summary = "remove APNs tokens reported invalid (BadDeviceToken, DeviceTokenNotForTopic, Unregistered, ExpiredToken)"
    let schedule = Schedule.hourly(atMinute: 20)

    func run(_ context: JobContext) throws -> JobResult {
        let tally: TokenCleanup.Tally
        if context.dryRun {
            tally = try TokenCleanup.preview(context.database)
        } else {
            let total: Int = try context.database.scalar("SELECT count(*) FROM relay_tokens WHERE \(TokenCleanup.invalidReasonsSQL)") ?? 0
            tally = try TokenCleanup.run(context.database, checkCancellation: context.checkCancellation) { done in
                // A pass stopped or failed part-way still reports the batches it committed.
                context.committed = CleanTokensJob.counts(done, withKept: false)
                context.progress(done: done.removed, total: total)
            }
        }
        return .completed(CleanTokensJob.counts(tally, withKept: true))
    }

    /// The pass's counts; `kept_reregistered` is known only once the pass has gone through every batch.
    static func counts(_ tally: TokenCleanup.Tally, withKept: Bool) -> Counts {
        var counts = Counts()
        counts["removed"] = tally.removed
        counts["devices_removed"] = tally.devicesRemoved
        if withKept { counts["kept_reregistered"] = tally.keptReregistered }
        return counts
    }
}
