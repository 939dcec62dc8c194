import Foundation
import Runner
import Store
import Testing
import TestSupport
@testable import Relay

/// `send-wakeups` against the HTTP/2 + TLS APNs stand-in, then `clean-tokens` on what it recorded.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct SendWakeupsTests {
    let t0 = Fixture.t0
    var t0ms: Int64 { t0.unixMilliseconds }

    func results(_ db: Database) throws -> [String: (Int?, String?, Int)] {
        // token row id → (status, reason, retry_due), keyed by registration order.
        var out: [String: (Int?, String?, Int)] = [:]
        for row in try db.query("SELECT id, result_status, result_reason, retry_due FROM relay_tokens") {
            out[String(try row.get(0, as: Int64.self))] = (try row.get(1, as: Int?.self), try row.get(2, as: String?.self), try row.get(3, as: Int.self))
        }
        return out
    }

    @Test(arguments: StoreKind.allCases) func everyAPNsAnswerIsRecordedPerTokenAndCleanTokensActsOnIt(_ kind: StoreKind) throws {
        let tokens = (1...7).map(Fixture.token)
        // 410 timestamps: one before the registration (the token was provisioned again since), one after.
        let standIn = try APNsStandIn(answers: [
            tokens[1]: .init(status: 400, reason: "BadDeviceToken"),
            tokens[2]: .init(status: 410, reason: "Unregistered", timestamp: t0ms - 3_600_000),
            tokens[3]: .init(status: 410, reason: "Unregistered", timestamp: t0ms + 5_000),
            tokens[4]: .init(status: 429, reason: "TooManyRequests"),
            tokens[5]: .init(status: 500, reason: "InternalServerError"),
        ])
        defer { standIn.stop() }
        let h = try RelayHarness(kind, environment: standIn.environment())
        let home = Fixture.deviceID(10), other = Fixture.deviceID(11), idle = Fixture.deviceID(12)
        for token in tokens[0...5] { try h.register(home, token, now: t0) }
        try h.register(other, tokens[6], environment: "sandbox", now: t0)
        try h.register(idle, Fixture.token(99), now: t0)
        let trigger = t0.addingTimeInterval(2)
        try h.command(["relay", "trigger"], ["--device-id", home], now: trigger)
        try h.command(["relay", "trigger"], ["--device-id", other], now: trigger)

        let pass = t0.addingTimeInterval(3)
        let report = try h.pass("send-wakeups", now: pass)
        #expect(report.exitCode == .success, "\(report.error?.message ?? "")")
        let counts = report.result.counts
        #expect(counts["devices"] == 2 && counts["pushes"] == 7)
        #expect(counts["delivered"] == 2 && counts["invalid"] == 3 && counts["retry"] == 2 && counts["transport_failures"] == 0)

        let received = try standIn.received()
        #expect(received.count == 7)
        #expect(received.allSatisfy { $0["violation"] is NSNull }, "\(received)")
        #expect(Set(received.compactMap { $0["token"] as? String }) == Set(tokens))
        // Production pushes share one connection; the sandbox push went to its own endpoint.
        let production = received.filter { ($0["token"] as? String) != tokens[6] }
        #expect(Set(production.compactMap { $0["conn"] as? Int }).count == 1)
        #expect(received.first { ($0["token"] as? String) == tokens[6] }?["conn"] as? Int != production.first?["conn"] as? Int)
        let expiration = String(pass.unixMilliseconds / 1000 + 3600)
        #expect(received.allSatisfy { $0["expiration"] as? String == expiration && $0["iat"] as? Int64 == pass.unixMilliseconds / 1000 })

        let db = try h.database()
        let rows = try db.query("SELECT result_status, result_reason, invalidated_at, retry_due FROM relay_tokens ORDER BY id")
        let recorded = try rows.map { (try $0.get(0, as: Int?.self), try $0.get(1, as: String?.self), try $0.get(2, as: Int64?.self), try $0.get(3, as: Int.self)) }
        #expect(recorded[0].0 == 200 && recorded[0].3 == 0)
        #expect(recorded[1].0 == 400 && recorded[1].1 == "BadDeviceToken")
        #expect(recorded[2].0 == 410 && recorded[2].2 == t0ms - 3_600_000)
        #expect(recorded[3].0 == 410 && recorded[3].2 == t0ms + 5_000)
        #expect(recorded[4].0 == 429 && recorded[4].3 == 1)
        #expect(recorded[5].0 == 500 && recorded[5].3 == 1)
        #expect(recorded[6].0 == 200)
        #expect(recorded[7].0 == nil, "the untriggered device was not pushed")

        // clean-tokens: BadDeviceToken and the 410 newer than the registration go; the rest stay.
        let clean = try h.pass("clean-tokens", now: pass)
        #expect(clean.result.counts["removed"] == 2 && clean.result.counts["kept_reregistered"] == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens") == 6)

        // Next pass: no new trigger, so only the 429 and 500 tokens are pushed again.
        try standIn.script(answers: [:])
        let retry = try h.pass("send-wakeups", now: pass.addingTimeInterval(60))
        #expect(retry.result.counts["devices"] == 0 && retry.result.counts["pushes"] == 2 && retry.result.counts["delivered"] == 2)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE retry_due = 1") == 0)
        #expect(try standIn.received().count == 9)

        // Privacy: no token, Device ID, URL or JWT in any output or log line.
        let everything = h.everything
        for secret in tokens + [home, other, standIn.url, "127.0.0.1", "eyJ"] { #expect(!everything.contains(secret), "\(secret)") }
    }

    @Test(arguments: StoreKind.allCases) func aDeviceIsPushedAtMostOncePer30Seconds(_ kind: StoreKind) throws {
        #expect(WakeupDebounce.isDue(lastTriggerAt: 1_000, lastPushAt: nil, now: 1_000))
        #expect(!WakeupDebounce.isDue(lastTriggerAt: nil, lastPushAt: nil, now: 1_000))
        // Inside the window after a push a trigger is debounced: observed, never another push (docs/protocols/relay-api.md, "Gating and observation").
        #expect(!WakeupDebounce.isDue(lastTriggerAt: 10_000, lastPushAt: 5_000, now: 35_000))
        #expect(!WakeupDebounce.isDue(lastTriggerAt: 34_999, lastPushAt: 5_000, now: 100_000))
        #expect(WakeupDebounce.isDue(lastTriggerAt: 35_000, lastPushAt: 5_000, now: 35_000))
        #expect(!WakeupDebounce.isDue(lastTriggerAt: 5_000, lastPushAt: 5_000, now: 100_000))
        // The trailing push (RELAY_TRAILING_PUSH=on): held back until the window ends, then pushed.
        #expect(!WakeupDebounce.isDue(lastTriggerAt: 10_000, lastPushAt: 5_000, now: 34_999, trailingPush: true))
        #expect(WakeupDebounce.isDue(lastTriggerAt: 10_000, lastPushAt: 5_000, now: 35_000, trailingPush: true))

        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        let h = try RelayHarness(kind, environment: standIn.environment())
        let device = Fixture.deviceID(20)
        try h.register(device, Fixture.token(1), now: t0)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0)
        #expect(try h.pass("send-wakeups", now: t0).result.counts["pushes"] == 1)
        // Triggers at +2.2 s and +4.4 s are debounced: no push at the window's end, nor later.
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(2.2))
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(4.4))
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(29)).result.counts["pushes"] == 0)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(30.1)).result.counts["pushes"] == 0)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(90)).result.counts["pushes"] == 0)
        #expect(try standIn.received().count == 1)
        #expect(try h.database().scalar("SELECT last_trigger_at FROM relay_devices") == t0.addingTimeInterval(4.4).unixMilliseconds, "observed")
        // A trigger after the window is pushed at once.
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(100))
        // A dry run reports and sends nothing.
        let dry = try h.pass("send-wakeups", ["--dry-run"], now: t0.addingTimeInterval(100))
        #expect(dry.result.counts["pushes"] == 1)
        #expect(try standIn.received().count == 1)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(100)).result.counts["pushes"] == 1)
        #expect(try standIn.received().count == 2)
        #expect(try h.database().scalar("SELECT last_push_at FROM relay_devices") == t0.addingTimeInterval(100).unixMilliseconds)
    }

    /// A Device ID with `tokens` whose first APNs answers 429 at t0, retried and delivered at +40 s with no new trigger;
    /// then a trigger at +45 s, 5 s after the retry push. The harness and the stand-in (3 pushes received so far with
    /// two tokens, 2 with one).
    func retriedThenTriggered(_ kind: StoreKind, tokens: [String], device: String, environment: [String: String] = [:]) throws -> (RelayHarness, APNsStandIn) {
        let standIn = try APNsStandIn(answers: [tokens[0]: .init(status: 429, reason: "TooManyRequests")])
        let h = try RelayHarness(kind, environment: standIn.environment().merging(environment) { $1 })
        for token in tokens { try h.register(device, token, now: t0) }
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0)
        #expect(try h.pass("send-wakeups", now: t0).result.counts["retry"] == 1)
        try standIn.script(answers: [:])
        let retry = try h.pass("send-wakeups", now: t0.addingTimeInterval(40)).result.counts
        #expect(retry["devices"] == 0 && retry["pushes"] == 1 && retry["delivered"] == 1, "\(retry)")
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(45))
        return (h, standIn)
    }

    /// A retry push that reaches every live token of its Device ID is that Device ID's push: a trigger in the next 30 s
    /// is debounced as after any other push, not pushed once the token's own window ends.
    @Test(arguments: StoreKind.allCases) func aTriggerInsideTheWindowOfARetryPushIsDebounced(_ kind: StoreKind) throws {
        let device = Fixture.deviceID(21)
        let (h, standIn) = try retriedThenTriggered(kind, tokens: [Fixture.token(1)], device: device)
        defer { standIn.stop() }
        #expect(try h.database().scalar("SELECT last_push_at FROM relay_devices") == t0.addingTimeInterval(40).unixMilliseconds)
        // Observed, never pushed: not when the token's window ends, nor later.
        for offset in [50.0, 70.1, 75.1, 100, 200] {
            #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(offset)).result.counts["pushes"] == 0, "pushed at +\(offset) s")
        }
        #expect(try standIn.received().count == 2)
        // A trigger after that window is pushed at once.
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(300))
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(300)).result.counts["pushes"] == 1)
        #expect(try standIn.received().count == 3)
    }

    /// A retry push that leaves another live token of its Device ID unpushed moves nothing: that token's phone was last
    /// woken long ago, so a trigger right after the retry is still pushed, to both tokens, once the retry's window ends.
    @Test(arguments: StoreKind.allCases) func aRetryPushThatMissesATokenOfItsDeviceIdLeavesTheNextTriggerDue(_ kind: StoreKind) throws {
        let (h, standIn) = try retriedThenTriggered(kind, tokens: [Fixture.token(1), Fixture.token(2)], device: Fixture.deviceID(22))
        defer { standIn.stop() }
        #expect(try h.database().scalar("SELECT last_push_at FROM relay_devices") == t0.unixMilliseconds)
        // Due, but the retried token is inside its window: the Device ID waits for it, then both are pushed.
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(50)).result.counts["pushes"] == 0)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(70.1)).result.counts["pushes"] == 2)
        #expect(try standIn.received().count == 5)
    }

    /// `RELAY_TRAILING_PUSH=on`: a retry push leaves the push time as it was, and a trigger inside the retry's window
    /// gets the trailing push once that window ends — one push, not more.
    @Test(arguments: StoreKind.allCases) func withTheTrailingPushATriggerInsideARetrysWindowIsPushedOnceWhenItEnds(_ kind: StoreKind) throws {
        let (h, standIn) = try retriedThenTriggered(kind, tokens: [Fixture.token(1)], device: Fixture.deviceID(23), environment: ["RELAY_TRAILING_PUSH": "on"])
        defer { standIn.stop() }
        #expect(try h.database().scalar("SELECT last_push_at FROM relay_devices") == t0.unixMilliseconds)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(50)).result.counts["pushes"] == 0)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(70.1)).result.counts["pushes"] == 1)
        for offset in [75.1, 100, 200] {
            #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(offset)).result.counts["pushes"] == 0, "pushed at +\(offset) s")
        }
        #expect(try standIn.received().count == 3)
    }

    /// `RELAY_TRAILING_PUSH=on`: triggers inside the window are pushed once when it ends; a value other than on/off is refused (78).
    @Test(arguments: StoreKind.allCases) func theTrailingPushIsAnOperatorSettingOffByDefault(_ kind: StoreKind) throws {
        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        let h = try RelayHarness(kind, environment: standIn.environment().merging(["RELAY_TRAILING_PUSH": "on"]) { $1 })
        let device = Fixture.deviceID(21)
        try h.register(device, Fixture.token(2), now: t0)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0)
        #expect(try h.pass("send-wakeups", now: t0).result.counts["pushes"] == 1)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(2.2))
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0.addingTimeInterval(4.4))
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(29)).result.counts["pushes"] == 0)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(30.1)).result.counts["pushes"] == 1)
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(90)).result.counts["pushes"] == 0)
        #expect(try standIn.received().count == 2)

        let bad = try RelayHarness(kind, environment: standIn.environment().merging(["RELAY_TRAILING_PUSH": "yes"]) { $1 })
        let refused = try bad.pass("send-wakeups", now: t0)
        #expect(refused.exitCode == .configuration && refused.error?.category == "trailing-push")
        #expect(refused.error?.message == "RELAY_TRAILING_PUSH must be on or off")
    }

    /// Regression (found by the chaos harness): a pass killed after its pushes left and before it recorded
    /// them used to push the same tokens again on a rerun inside the 30 s window.
    @Test(arguments: StoreKind.allCases) func aPassKilledAfterSendingIsNotRepeatedWithinTheWindowButIsAfterIt(_ kind: StoreKind) throws {
        #expect(WakeupDebounce.mayPush(sentAt: nil, now: 0))
        #expect(!WakeupDebounce.mayPush(sentAt: 1_000, now: 30_999))
        #expect(WakeupDebounce.mayPush(sentAt: 1_000, now: 31_000))

        let standIn = try APNsStandIn(answers: [Fixture.token(3): .init(status: 429, reason: "TooManyRequests")])
        defer { standIn.stop() }
        let h = try RelayHarness(kind, environment: standIn.environment())
        let device = Fixture.deviceID(30), retrying = Fixture.deviceID(31)
        try h.register(device, Fixture.token(1), now: t0)
        try h.register(device, Fixture.token(2), now: t0)
        try h.register(retrying, Fixture.token(3), now: t0)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0)
        try h.command(["relay", "trigger"], ["--device-id", retrying], now: t0)
        #expect(try h.pass("send-wakeups", now: t0).result.counts["pushes"] == 3)
        #expect(try standIn.received().count == 3)

        // What a SIGKILL between the sends and the recording leaves: stamps committed, nothing recorded.
        let db = try h.database()
        try db.execute("UPDATE relay_devices SET last_push_at = NULL")
        try db.execute("UPDATE relay_tokens SET result_status = NULL, result_reason = NULL, result_at = NULL, retry_due = 1")
        let early = try h.pass("send-wakeups", now: t0.addingTimeInterval(29))
        #expect(early.exitCode == .success && early.result.counts["pushes"] == 0 && early.result.counts["devices"] == 0)
        #expect(try standIn.received().count == 3, "nothing pushed twice inside the window")
        // The triggers were kept: after the window the Device ID and the retry go out again (at-least-once).
        try standIn.script(answers: [:])
        let late = try h.pass("send-wakeups", now: t0.addingTimeInterval(30))
        #expect(late.result.counts["devices"] == 2 && late.result.counts["pushes"] == 3 && late.result.counts["delivered"] == 3)
        #expect(try db.scalar("SELECT count(*) FROM relay_devices WHERE last_push_at IS NULL") == 0)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE retry_due = 1 OR sent_at <> ?", [t0.addingTimeInterval(30).unixMilliseconds]) == 0)
        #expect(try standIn.received().count == 6)
    }

    @Test(arguments: StoreKind.allCases) func theProviderTokenIsReusedFor50MinutesAndReMintedOnceWhenExpired(_ kind: StoreKind) throws {
        #expect(ProviderToken.decide(cachedMintedAt: nil, now: 0) == .mint)
        #expect(ProviderToken.decide(cachedMintedAt: 0, now: 49 * 60_000) == .reuse)
        #expect(ProviderToken.decide(cachedMintedAt: 0, now: 50 * 60_000) == .mint)
        #expect(ProviderToken.decide(cachedMintedAt: 0, now: 19 * 60_000, rejectedAsExpired: true) == .keepUntilRemintAllowed)
        #expect(ProviderToken.decide(cachedMintedAt: 0, now: 20 * 60_000, rejectedAsExpired: true) == .mint)

        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        let h = try RelayHarness(kind, environment: standIn.environment())
        let device = Fixture.deviceID(30)
        try h.register(device, Fixture.token(1), now: t0)
        func push(at date: Date) throws -> PassRunner.Report {
            try h.command(["relay", "trigger"], ["--device-id", device], now: date)
            return try h.pass("send-wakeups", now: date)
        }
        let t0s = t0ms / 1000
        #expect(try push(at: t0).result.counts["provider_token_minted"] == 1)
        #expect(try push(at: t0.addingTimeInterval(10 * 60)).result.counts["provider_token_minted"] == 0)
        // APNs now refuses tokens issued at t0. 15 minutes after minting: no re-mint yet, the push is retried…
        try standIn.script(answers: [:], rejectIssuedBefore: t0s + 1)
        let early = try push(at: t0.addingTimeInterval(15 * 60))
        #expect(early.exitCode == .success)
        #expect(early.result.counts["retry"] == 1 && early.result.counts["provider_token_reminted"] == 0)
        // …and once the token is 20 minutes old, the retry re-mints once and goes through.
        let late = try h.pass("send-wakeups", now: t0.addingTimeInterval(25 * 60))
        #expect(late.result.counts["pushes"] == 1 && late.result.counts["provider_token_reminted"] == 1 && late.result.counts["delivered"] == 1)
        // The new token is reused until it is 50 minutes old.
        #expect(try push(at: t0.addingTimeInterval(60 * 60)).result.counts["provider_token_minted"] == 0)
        #expect(try push(at: t0.addingTimeInterval(75 * 60)).result.counts["provider_token_minted"] == 1)
        let iats = try standIn.received().compactMap { $0["iat"] as? Int64 }
        #expect(iats == [t0s, t0s, t0s, t0s, t0s + 25 * 60, t0s + 25 * 60, t0s + 75 * 60])
    }

    @Test(arguments: StoreKind.allCases) func anExpiredProviderTokenIsReMintedOnceInThePass(_ kind: StoreKind) throws {
        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        let h = try RelayHarness(kind, environment: standIn.environment())
        let device = Fixture.deviceID(31)
        try h.register(device, Fixture.token(1), now: t0)
        try h.register(device, Fixture.token(2), now: t0)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0)
        #expect(try h.pass("send-wakeups", now: t0).result.counts["delivered"] == 2)
        let t1 = t0.addingTimeInterval(30 * 60)
        try standIn.script(answers: [:], rejectIssuedBefore: t0ms / 1000 + 1)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t1)
        let report = try h.pass("send-wakeups", now: t1)
        #expect(report.result.counts["provider_token_reminted"] == 1 && report.result.counts["delivered"] == 2)
        let received = try standIn.received()
        #expect(received.count == 6)
        let reasons: [String?] = received.suffix(4).map { $0["reason"] as? String }
        #expect(reasons.filter { $0 == "ExpiredProviderToken" }.count == 2)
        #expect(received.suffix(2).allSatisfy { $0["iat"] as? Int64 == t1.unixMilliseconds / 1000 && $0["status"] as? Int == 200 })
    }

    @Test(arguments: StoreKind.allCases) func aWrongKeyIsAConfigurationErrorAndAnUnreachableEndpointIsTransient(_ kind: StoreKind) throws {
        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        var environment = standIn.environment()
        let otherKey = standIn.directory.file("other.p8")
        try Cryptography.P256PrivateKey.generate().pkcs8PEM.write(toFile: otherKey, atomically: true, encoding: .utf8)
        environment["APNS_KEY_FILE"] = otherKey
        let h = try RelayHarness(kind, environment: environment)
        let device = Fixture.deviceID(40)
        try h.register(device, Fixture.token(1), now: t0)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t0)
        let refused = try h.pass("send-wakeups", now: t0)
        #expect(refused.exitCode == .configuration && refused.error?.category == "apns-refused")
        #expect(try standIn.received().first?["reason"] as? String == "InvalidProviderToken")
        #expect(try h.database().scalar("SELECT retry_due FROM relay_tokens") == 1)

        // Unreachable: exit 75, the token stays due.
        environment["APNS_KEY_FILE"] = standIn.keyFile
        environment["APNS_URL"] = "https://127.0.0.1:\(unusedPort())"
        h.environment = environment
        let unreachable = try h.pass("send-wakeups", now: t0.addingTimeInterval(60))
        #expect(unreachable.exitCode == .temporaryFailure)
        #expect(try h.database().scalar("SELECT retry_due FROM relay_tokens") == 1)

        // Fixed: the retry goes through.
        h.environment = standIn.environment()
        #expect(try h.pass("send-wakeups", now: t0.addingTimeInterval(120)).result.counts["delivered"] == 1)

        // Missing or unusable settings: 78 before anything is sent, naming the variable only.
        for (key, value) in [("APNS_TOPIC", ""), ("APNS_KEY_FILE", standIn.directory.file("missing.p8")), ("APNS_KEY_FILE", standIn.caFile), ("APNS_URL", "http://127.0.0.1:1")] {
            var broken = standIn.environment()
            broken[key] = value
            h.environment = broken
            let report = try h.pass("send-wakeups", now: t0.addingTimeInterval(180))
            #expect(report.exitCode == .configuration, "\(key)")
            #expect(report.error.map { $0.message.contains(key) && !$0.message.contains(value.isEmpty ? "\u{0}" : value) } == true, "\(report.error?.message ?? "")")
        }
    }
}

import Cryptography
