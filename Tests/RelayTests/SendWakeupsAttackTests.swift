import Foundation
import Store
import Testing
import TestSupport
@testable import Relay

/// The attacks on `send-wakeups` through the real `job` binary, the HTTP/2 APNs
/// stand-in and the store file. The stand-in's own log of what it received is the independent model.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct SendWakeupsAttackTests {
    let t0: Int64 = 1_780_000_000

    /// The tokens the stand-in received (one entry per request), oldest first.
    func pushed(_ standIn: APNsStandIn) throws -> [String] { try standIn.received().compactMap { $0["token"] as? String } }

    @Test(arguments: StoreKind.allCases) func aDeadTokenIsNeverPushedAgainAfterItsVerdict(_ kind: StoreKind) throws {
        let tokens = (1...7).map(Fixture.token)
        let standIn = try APNsStandIn(answers: [
            tokens[0]: .init(status: 400, reason: "BadDeviceToken"),
            tokens[1]: .init(status: 400, reason: "DeviceTokenNotForTopic"),
            tokens[2]: .init(status: 410, reason: "Unregistered", timestamp: (t0 + 1) * 1000),
            tokens[3]: .init(status: 410, reason: "ExpiredToken", timestamp: (t0 + 1) * 1000),
            tokens[4]: .init(status: 413, reason: "PayloadTooLarge"),
            // APNs learned this one was invalid before it was registered (again): it is live.
            tokens[5]: .init(status: 410, reason: "Unregistered", timestamp: (t0 - 3600) * 1000),
        ])
        defer { standIn.stop() }
        let m = try RelayMachine(kind, environment: standIn.environment())
        let device = Fixture.deviceID(70)
        for token in tokens { try m.register(device, token, at: t0) }

        try m.trigger(device, at: t0 + 2)
        let first = try m.sendWakeups(at: t0 + 3)
        #expect(first.exitCode == 0 && first.counts["pushes"] == 7 && first.counts["invalid"] == 6 && first.counts["delivered"] == 1, "\(first)")
        #expect(try pushed(standIn).count == 7)

        // The next trigger pushes only the live tokens: no dead one waits for the hourly clean-tokens to stop.
        try m.trigger(device, at: t0 + 60)
        let second = try m.sendWakeups(at: t0 + 61)
        #expect(second.exitCode == 0 && second.counts["pushes"] == 2, "\(second)")
        #expect(Array(try pushed(standIn).dropFirst(7)).sorted() == [tokens[5], tokens[6]].sorted())

        // Registered again after its verdict (the app provisioned it anew): live again.
        try m.register(device, tokens[0], at: t0 + 70)
        try m.trigger(device, at: t0 + 100)
        #expect(try m.sendWakeups(at: t0 + 101).counts["pushes"] == 3)
        #expect(Array(try pushed(standIn).dropFirst(9)).sorted() == [tokens[0], tokens[5], tokens[6]].sorted())

        // clean-tokens stays the sweeper: it removes exactly the dead ones (PayloadTooLarge included).
        let clean = try m.run(["--json", "clean-tokens"], at: t0 + 120)
        let counts = try clean.jsonObject()["counts"] as? [String: Int]
        #expect(clean.exitCode == 0 && counts?["removed"] == 5 && counts?["kept_reregistered"] == 1, "\(clean.stdout)")
        #expect(try m.database().scalar("SELECT count(*) FROM relay_tokens") == 2)
        try m.trigger(device, at: t0 + 200)
        #expect(try m.sendWakeups(at: t0 + 201).counts["pushes"] == 2)
        #expect(try pushed(standIn).count == 14)
    }

    @Test(arguments: StoreKind.allCases) func aForbiddenTokenNeverFailsThePassAndACondemnedCredentialStillReportsEveryAnswer(_ kind: StoreKind) throws {
        let good = Fixture.token(1), forbidden = Fixture.token(2)
        let standIn = try APNsStandIn(answers: [forbidden: .init(status: 403, reason: "Forbidden")])
        defer { standIn.stop() }
        let m = try RelayMachine(kind, environment: standIn.environment())
        let device = Fixture.deviceID(71)
        try m.register(device, good, at: t0)
        try m.register(device, forbidden, at: t0)

        try m.trigger(device, at: t0 + 1)
        let first = try m.sendWakeups(at: t0 + 2)
        #expect(first.exitCode == 0, "\(first.stderr)")
        #expect(first.counts["delivered"] == 1 && first.counts["rejected"] == 1 && first.counts["configuration"] == 0, "\(first.counts)")
        let db = try m.database()
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 403 AND result_reason = 'Forbidden' AND retry_due = 0") == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200") == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_devices WHERE last_push_at = ?", [(t0 + 2) * 1000]) == 1)
        // Not a dead token: the next trigger pushes both again, and the pass still succeeds.
        try m.trigger(device, at: t0 + 60)
        let second = try m.sendWakeups(at: t0 + 61)
        #expect(second.exitCode == 0 && second.counts["pushes"] == 2 && second.counts["delivered"] == 1)

        // An answer that condemns the provider credential fails the pass (78), after every answer was recorded,
        // and the report still counts the good push it delivered.
        try standIn.script(answers: [forbidden: .init(status: 403, reason: "InvalidProviderToken")])
        try m.trigger(device, at: t0 + 120)
        let refused = try m.run(["--json", "send-wakeups"], at: t0 + 121)
        #expect(refused.exitCode == 78)
        let report = try refused.jsonObject()
        let counts = report["counts"] as? [String: Int] ?? [:]
        #expect(counts["delivered"] == 1 && counts["configuration"] == 1 && counts["pushes"] == 2, "\(refused.stdout)")
        #expect((report["error"] as? [String: Any])?["category"] as? String == "apns-refused")
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200 AND result_at = ?", [(t0 + 121) * 1000]) == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_reason = 'InvalidProviderToken' AND retry_due = 1") == 1)
    }

    /// SIGTERM at several points of a pass over 600 due tokens (answers slowed to leave one every 2 ms): every
    /// answer received is kept, and across the stopped pass and its reruns — inside the 30 s window and after
    /// it — the stand-in receives each token exactly once for the one accepted trigger.
    @Test(arguments: StoreKind.allCases) func aSigtermedPassKeepsEveryAnswerAndNoTokenIsPushedTwiceForOneTrigger(_ kind: StoreKind) throws {
        let devices = 300
        for threshold in [1, 100, 550] {
            let standIn = try APNsStandIn(answerDelayMilliseconds: 2)
            defer { standIn.stop() }
            let m = try RelayMachine(kind, environment: standIn.environment())
            try m.register(Fixture.deviceID(1), Fixture.token(1), at: t0 - 600)  // creates the store and its key; never triggered
            let token = { (i: Int, j: Int) in Fixture.token(1000 + i * 2 + j) }
            try m.seed(devices: devices, tokensPerDevice: 2, registeredAt: (t0 - 600) * 1000, triggeredAt: (t0 - 1) * 1000,
                       deviceID: { Fixture.deviceID(1000 + $0) }, token: token)
            let due = Set((0..<devices).flatMap { i in [token(i, 0), token(i, 1)] })

            let running = try m.start(["--json", "send-wakeups"], at: t0)
            let deadline = Date().addingTimeInterval(60)
            while try running.process.isRunning && Date() < deadline && pushed(standIn).count < threshold { usleep(2_000) }
            running.signal(SIGTERM)
            let stopped = try running.wait(timeout: 120)
            #expect(stopped.exitCode == 75, "kill point \(threshold): \(stopped.stderr)")
            let answeredBeforeStop: Int = try m.database().scalar("SELECT count(*) FROM relay_tokens WHERE result_status IS NOT NULL") ?? -1
            #expect(answeredBeforeStop == (try pushed(standIn).count), "kill point \(threshold): every answer received was recorded")

            for at in [t0 + 5, t0 + 31, t0 + 62, t0 + 93] {
                let rerun = try m.sendWakeups(at: at)
                #expect(rerun.exitCode == 0, "kill point \(threshold), rerun at +\(at - t0): \(rerun.stderr)")
            }
            let received = try pushed(standIn)
            var times: [String: Int] = [:]
            for token in received { times[token, default: 0] += 1 }
            #expect(Set(received) == due, "kill point \(threshold): every due token pushed, no other")
            #expect(times.values.filter { $0 > 1 }.count == 0, "kill point \(threshold): \(times.values.filter { $0 > 1 }.count) token(s) pushed twice for one trigger")
            let db = try m.database()
            #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200") == due.count)
            #expect(try db.scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at > coalesce(last_push_at, 0)") == 0)
        }
    }

    /// A clock that went backwards an hour: the stored registration, push and send times and the cached provider
    /// token lie in the future. They are treated as now: a trigger at once is debounced, one after the 30 s window
    /// from now is pushed (not an hour later), with a provider token issued now, and the repair is logged once.
    @Test(arguments: StoreKind.allCases) func aPushTimeStoredInTheFutureIsTreatedAsNow(_ kind: StoreKind) throws {
        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        let m = try RelayMachine(kind, environment: standIn.environment())
        let device = Fixture.deviceID(72), token = Fixture.token(72)
        try m.register(device, token, at: t0 + 3600)
        try m.trigger(device, at: t0 + 3600)
        #expect(try m.sendWakeups(at: t0 + 3600).counts["delivered"] == 1)

        // The clock is set back an hour; the homeserver triggers again.
        try m.trigger(device, at: t0 + 10)
        let inWindow = try m.sendWakeups(at: t0 + 10)
        #expect(inWindow.exitCode == 0 && inWindow.counts["pushes"] == 0)
        #expect(inWindow.stderr.components(separatedBy: "clock.stored_time_in_future").count == 2, "\(inWindow.stderr)")
        let db = try m.database()
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE sent_at > ?1 OR result_at > ?1 OR registered_at > ?1", [(t0 + 10) * 1000]) == 0)
        #expect(try db.scalar("SELECT count(*) FROM relay_devices WHERE last_push_at > ? OR last_trigger_at > ?", [(t0 + 10) * 1000, (t0 + 10) * 1000]) == 0)

        try m.trigger(device, at: t0 + 41)
        let after = try m.sendWakeups(at: t0 + 41)
        #expect(after.exitCode == 0 && after.counts["devices"] == 1 && after.counts["delivered"] == 1, "\(after)")
        #expect(!after.stderr.contains("clock.stored_time_in_future"))
        #expect(try pushed(standIn) == [token, token])
        #expect(try standIn.received().compactMap { $0["iat"] as? Int64 } == [t0 + 3600, t0 + 41], "a provider token issued now, not in the future")
        for output in [inWindow.stderr, after.stderr] { #expect(!output.contains(token) && !output.contains(device)) }
    }
}
