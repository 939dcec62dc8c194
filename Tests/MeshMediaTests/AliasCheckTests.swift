import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// The 0x09 alias release criterion: the pure rule, and `media-alias-check` with its metrics file.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct AliasCheckTests {
    typealias Build = AliasCriterion.Build
    let now: Int64 = 1_800_000_000_000

    @Test func theAliasStaysUntilEveryEmittingBuildExpiredAndIsExcludedByPolicy() {
        let expired = Build(platform: "ios", version: "1.4.0", channel: "testflight", emittedAlias: true, expiresAt: now - 1)
        let live = Build(platform: "ios", version: "1.4.1", channel: "internal", emittedAlias: true, expiresAt: now + 86_400_000)
        let clean = Build(platform: "android", version: "1.0.0", channel: "release", emittedAlias: false, expiresAt: nil)

        let untracked = AliasCriterion.evaluate(builds: [clean], policy: [:], now: now)
        #expect(!untracked.removable && untracked.untracked)

        let noPolicy = AliasCriterion.evaluate(builds: [expired, clean], policy: [:], now: now)
        #expect(!noPolicy.removable)
        #expect(noPolicy.holding.map(\.reasons) == [[.policyAllows]])

        let stillLive = AliasCriterion.evaluate(builds: [expired, live], policy: ["ios": "1.5.0"], now: now)
        #expect(!stillLive.removable)
        #expect(stillLive.holding.map(\.build) == [live])
        #expect(stillLive.holding.map(\.reasons) == [[.notExpired]])

        let policyTooLow = AliasCriterion.evaluate(builds: [expired], policy: ["ios": "1.4.0"], now: now)
        #expect(policyTooLow.holding.map(\.reasons) == [[.policyAllows]])   // 1.4.0 is still supported

        let otherPlatform = AliasCriterion.evaluate(builds: [expired], policy: ["android": "9.0"], now: now)
        #expect(!otherPlatform.removable)

        let noExpiry = Build(platform: "ios", version: "1.3", channel: "beta", emittedAlias: true, expiresAt: nil)
        #expect(AliasCriterion.evaluate(builds: [noExpiry], policy: ["ios": "2"], now: now).holding.map(\.reasons) == [[.notExpired]])

        let done = AliasCriterion.evaluate(builds: [expired, clean], policy: ["ios": "1.5.0"], now: now)
        #expect(done.removable && done.holding.isEmpty && done.word == "alias-removable")
    }

    @Test func versionsCompareNumerically() {
        #expect(Version.compare("1.10.0", "1.9") == 1)
        #expect(Version.compare("1.4", "1.4.0") == 0)
        #expect(Version.compare("1.4.0", "1.4.1") == -1)
        #expect(Version.compare("1.x", "1.0") == nil)
        #expect(Version.parse("") == nil && Version.parse("1..2") == nil && Version.parse("1.2.3.4.5") == nil && Version.parse("-1") == nil)
    }

    @Test func theJobReportsTheVerdictInItsResultAndMetricsAndTheBuildsHoldingIt() throws {
        let lab = MeshLab()
        let metrics = lab.directory.file("metrics")
        try FileManager.default.createDirectory(atPath: metrics, withIntermediateDirectories: true)
        // --metrics-dir is a global option: it goes before the command.
        func checkGlobal() throws -> [String: Any] {
            let full = ["--store", lab.store("n"), "--now", lab.nowArgument, "--json", "--metrics-dir", metrics, "media-alias-check"]
            let result = try JobProcess.run(full, environment: JobProcess.environment(home: lab.directory.path))
            #expect(result.exitCode == 0, "\(result.stderr)")
            return try result.jsonObject()
        }
        var object = try checkGlobal()
        #expect((object["details"] as? [String: Any])?["verdict"] as? String == "alias-required")
        #expect((object["details"] as? [String: Any])?["untracked"] as? Bool == true)

        try lab.job("n", ["mesh", "builds", "add", "--platform", "ios", "--version", "1.4.0", "--channel", "testflight", "--emitted-alias",
                          "--expires", "@\(lab.clock / 1000 + 3600)"])
        try lab.job("n", ["mesh", "builds", "add", "--platform", "android", "--version", "1.2.0", "--channel", "release"])
        try lab.job("n", ["mesh", "policy", "set", "--platform", "ios", "--min-version", "1.5.0"])
        object = try checkGlobal()
        let counts = object["counts"] as! [String: Int]
        #expect(counts["alias_required"] == 1 && counts["alias_removable"] == 0 && counts["builds_holding"] == 1)
        let holding = (object["details"] as! [String: Any])["holding"] as! [[String: Any]]
        #expect(holding.count == 1 && holding[0]["version"] as? String == "1.4.0" && holding[0]["reasons"] as? [String] == ["not-expired"])
        let prom = try String(contentsOfFile: metrics + "/media-alias-check.prom", encoding: .utf8)
        #expect(prom.contains("kind=\"alias_required\"} 1"))
        #expect(prom.contains("kind=\"builds_holding\"} 1"))

        lab.clock += 3_601_000   // the TestFlight build expires
        object = try checkGlobal()
        #expect((object["details"] as! [String: Any])["verdict"] as? String == "alias-removable")
        let after = try String(contentsOfFile: metrics + "/media-alias-check.prom", encoding: .utf8)
        #expect(after.contains("kind=\"alias_removable\"} 1"))
        #expect(after.contains("kind=\"alias_required\"} 0"))

        let list = try lab.job("n", ["mesh", "builds", "list"], json: true).jsonObject()
        #expect((list["builds"] as? [Any])?.count == 2)
        #expect((list["policy"] as? [String: String])?["ios"] == "1.5.0")
    }

    @Test func badBuildAndPolicyInputIsAUsageError() throws {
        let lab = MeshLab()
        try lab.job("n", ["mesh", "builds", "add", "--platform", "windows", "--version", "1.0", "--channel", "release"], exit: 64)
        try lab.job("n", ["mesh", "builds", "add", "--platform", "ios", "--version", "1.0-beta", "--channel", "release"], exit: 64)
        try lab.job("n", ["mesh", "builds", "add", "--platform", "ios", "--version", "1.0", "--channel", "nightly"], exit: 64)
        try lab.job("n", ["mesh", "builds", "add", "--platform", "ios", "--version", "1.0", "--channel", "beta", "--expires", "soon"], exit: 64)
        try lab.job("n", ["mesh", "policy", "set", "--platform", "ios"], exit: 64)
        let list = try lab.job("n", ["mesh", "builds", "list"], json: true).jsonObject()
        #expect((list["builds"] as? [Any])?.isEmpty == true)
    }
}
