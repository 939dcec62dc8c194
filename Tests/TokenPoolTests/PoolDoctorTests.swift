import Foundation
import Testing
import TestSupport
@testable import TokenPool

/// `job doctor`'s `token-pool` group.
@Suite(.timeLimit(.minutes(15))) struct PoolDoctorTests {
    static func statuses(_ harness: PoolHarness, now: Date) throws -> (exit: Int32, checks: [String: String]) {
        let result = try harness.command(["doctor"], now: now, json: true)
        let checks = try #require(try result.json()["checks"] as? [[String: Any]])
        var byName: [String: String] = [:]
        for check in checks { byName[check["name"] as? String ?? ""] = check["status"] as? String }
        return (result.exitCode.rawValue, byName)
    }

    @Test func theGroupSaysWhatIsMissingUntilTheMachineCanPrefetch() throws {
        let now = instant("2027-03-03T03:03:03Z")
        let unconfigured = PoolHarness()
        #expect(try Self.statuses(unconfigured, now: now).checks["token-pool"] == "skip")

        let harness = PoolHarness(environment: ["ENDORSER_URL": "https://endorser.invalid"])
        try harness.importKey(PoolHarness.keyA)
        var report = try Self.statuses(harness, now: now)
        #expect(report.exit == 78)
        #expect(report.checks["pool-identity"] == "ok")
        #expect(report.checks["pool-today"] == "FAIL")
        #expect(report.checks["prefetch-config"] == "FAIL")

        try harness.setting("pool.size", "5")
        try harness.setting("prefetch.after-id", PoolHarness.afterID)
        #expect(try harness.pass("mint-pool", now: now).exitCode == .success)
        report = try Self.statuses(harness, now: now)
        #expect(report.exit == 0)
        #expect(["pool-identity", "pool-today", "pool-verify", "prefetch-config"].allSatisfy { report.checks[$0] == "ok" })

        // Five days later the pool no longer covers today.
        report = try Self.statuses(harness, now: now.addingTimeInterval(5 * 86_400))
        #expect(report.checks["pool-today"] == "FAIL")
        #expect(report.checks["pool-verify"] == "ok")
    }

    @Test func doctorSaysAPlainHTTPEndorserURLToANonLoopbackHostWouldSendTheBearerInClear() throws {
        let now = instant("2027-03-03T03:03:03Z")
        let harness = PoolHarness(environment: ["ENDORSER_URL": "http://endorser.example"])
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "5")
        try harness.setting("prefetch.after-id", PoolHarness.afterID)
        #expect(try harness.pass("mint-pool", now: now).exitCode == .success)
        let result = try harness.command(["doctor"], now: now, json: true)
        #expect(result.exitCode == .configuration)
        #expect(result.stdout.contains("in clear"))
        #expect(try Self.statuses(harness, now: now).checks["prefetch-config"] == "FAIL")
        let loopback = PoolHarness(environment: ["ENDORSER_URL": "http://127.0.0.1:9"])
        try loopback.importKey(PoolHarness.keyA)
        try loopback.setting("prefetch.after-id", PoolHarness.afterID)
        #expect(try Self.statuses(loopback, now: now).checks["prefetch-config"] == "ok")
    }
}
