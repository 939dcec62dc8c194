import Runner
import Store

/// `media-alias-check`: evaluates the release criterion for removing the 0x09 receive alias and reports
/// `alias-required` or `alias-removable` with the builds that hold it back. The verdict goes to the counts
/// (`alias_required` / `alias_removable`, `builds_holding`), hence to the metrics file, and to `details`.
struct MediaAliasCheckJob: Job {
    let name = "media-alias-check"
    let summary = "report whether the 0x09 private-file alias may be removed (every emitting build expired and excluded by policy)"
    let schedule = Schedule.daily(hour: 6, minute: 0)

    func run(_ context: JobContext) throws -> JobResult {
        let (builds, policy) = try AliasRecords.load(context.database)
        let verdict = AliasCriterion.evaluate(builds: builds, policy: policy, now: context.nowMilliseconds)
        var counts = Counts()
        counts["alias_required"] = verdict.removable ? 0 : 1
        counts["alias_removable"] = verdict.removable ? 1 : 0
        counts["builds_holding"] = verdict.holding.count
        counts["emitting_builds"] = builds.filter(\.emittedAlias).count
        let holding: [JSON] = verdict.holding.map { entry in
            ["platform": .string(entry.build.platform), "version": .string(entry.build.version), "channel": .string(entry.build.channel),
             "reasons": .array(entry.reasons.map { .string($0.rawValue) })]
        }
        return .completed(counts, details: [("verdict", .string(verdict.word)), ("untracked", .bool(verdict.untracked)),
                                            ("holding", .array(holding))])
    }
}

/// Reads `mesh_builds` and `mesh_policy`.
enum AliasRecords {
    static func load(_ db: Database) throws -> ([AliasCriterion.Build], [String: String]) {
        let builds = try db.query("SELECT platform, version, channel, emitted_alias, expires_at FROM mesh_builds ORDER BY platform, id").map {
            AliasCriterion.Build(platform: try $0.get(0), version: try $0.get(1), channel: try $0.get(2),
                                 emittedAlias: try $0.get(3), expiresAt: try $0.get(4))
        }
        var policy: [String: String] = [:]
        for row in try db.query("SELECT platform, min_version FROM mesh_policy") { policy[try row.get(0)] = try row.get(1) }
        return (builds, policy)
    }
}
