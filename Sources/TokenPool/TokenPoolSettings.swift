import Runner

/// The module's settings (`job settings set KEY VALUE`).
enum TokenPoolSettings {
    static let poolSize = "pool.size"
    static let slackSeconds = "pool.slack-seconds"
    static let planIDs = "prefetch.plan-ids"
    static let afterID = "prefetch.after-id"

    static let all: [SettingSpec] = [
        // At least 2: with one slot the native selector would present the last day's token on the day after the
        // pool ends, inside its slack, so the days beyond the pool would not be free of credentials.
        .integer(poolSize, default: 100, in: 2...100_000, "BACKGROUND_JWT_POOL_SIZE: consecutive UTC days a pool covers, one token each"),
        .integer(slackSeconds, default: 300, in: 0...DayWindow.maximumSlackSeconds, "BACKGROUND_JWT_WINDOW_SLACK_SECONDS: padding on each end of a token's day window"),
        SettingSpec(key: planIDs, defaultValue: "", summary: "plan handle ids the prefetch asks Endorser about, comma-separated", validate: PrefetchRequest.planIDsProblem),
        SettingSpec(key: afterID, defaultValue: "", summary: "the 26-character ULID the prefetch asks for changes after (required for prefetch)", validate: PrefetchRequest.afterIDProblem),
    ]
}
