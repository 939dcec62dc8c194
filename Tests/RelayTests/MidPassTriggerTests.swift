import Chaos
import Foundation
import Store
import Testing
import TestSupport

/// A trigger that arrives while a `send-wakeups` pass is pushing its Device ID (after the claim stamped the tokens,
/// before the answers were recorded) is served by that push: it reaches APNs after the trigger was accepted, or the
/// trigger falls inside the 30 s window after it (docs/roles/relay.md, "A trigger inside the window is observed,
/// never another push"). Through the real `job` binary, with the APNs stand-in holding its answers so the trigger
/// lands mid-pass. And the window after a push that a later pass found answered counts from that push.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct MidPassTriggerTests {
    let t0: Int64 = 1_790_000_000

    /// A store of `kind`, the stand-in, and `job` runs against them at a chosen `--now`.
    final class Lab {
        let directory = TemporaryDirectory("mid-pass-trigger")
        let store: TestStore
        let standIn: APNsStandInProcess
        let environment: [String: String]

        init(_ kind: StoreKind, trailingPush: Bool = false) throws {
            store = try TestStore.make(kind, in: directory)
            standIn = try APNsStandInProcess(directory: directory.path, answers: [:])
            var extra = standIn.environment.merging(store.environment) { $1 }
            if trailingPush { extra["RELAY_TRAILING_PUSH"] = "on" }
            environment = JobProcess.environment(home: directory.path, extra)
        }

        deinit { standIn.stop() }

        func arguments(at seconds: Int64, _ arguments: [String]) -> [String] {
            ["--store", store.location, "--now", "@\(seconds)", "--json"] + arguments
        }

        func run(at seconds: Int64, _ arguments: [String]) throws -> JobProcess.Result {
            try JobProcess.run(self.arguments(at: seconds, arguments), environment: environment)
        }

        /// A pass at `passAt` whose `expected` pushes are held at the stand-in while `relay trigger` runs at `triggerAt`; returns
        /// the pass's counts once the held answer was let go.
        func passWithTriggerMidway(passAt: Int64, triggerAt: Int64, deviceID: String, pushes expected: Int = 2) throws -> [String: Int] {
            try standIn.holdAnswers(true)
            let pass = try JobProcess.start(arguments(at: passAt, ["send-wakeups"]), environment: environment)
            let deadline = Date().addingTimeInterval(60)
            while pass.process.isRunning, Date() < deadline, try standIn.requests(since: 0).count < pushesBefore + expected { usleep(10_000) }
            let trigger = try run(at: triggerAt, ["relay", "trigger", "--device-id", deviceID])
            guard trigger.exitCode == 0 else { throw TestFailure("relay trigger: \(trigger.stderr)") }
            try standIn.holdAnswers(false)
            let passed = try pass.wait(timeout: 120)
            guard passed.exitCode == 0 else { throw TestFailure("send-wakeups: \(passed.stdout) \(passed.stderr)") }
            pushesBefore = try standIn.requests(since: 0).count
            return ChaosProcess.counts(passed.stdout)
        }
        private var pushesBefore = 0

        func pushes() throws -> Int { try standIn.requests(since: 0).count }

        func counts(at seconds: Int64) throws -> [String: Int] {
            let pass = try run(at: seconds, ["send-wakeups"])
            guard pass.exitCode == 0 else { throw TestFailure("send-wakeups: \(pass.stdout) \(pass.stderr)") }
            return ChaosProcess.counts(pass.stdout)
        }
    }

    func provisioned(_ kind: StoreKind, trailingPush: Bool = false) throws -> (Lab, String) {
        let lab = try Lab(kind, trailingPush: trailingPush)
        let device = MultiHostRelayChaos.deviceID(7)
        #expect(try lab.run(at: t0, ["migrate"]).exitCode == 0)
        for n in 0..<2 {
            #expect(try lab.run(at: t0, ["relay", "register", "--device-id", device, "--apns-token", MultiHostRelayChaos.token(7, n)]).exitCode == 0)
        }
        #expect(try lab.run(at: t0, ["relay", "trigger", "--device-id", device]).exitCode == 0)
        return (lab, device)
    }

    @Test(arguments: StoreKind.allCases) func aTriggerArrivingWhileItsDeviceIDIsBeingPushedIsServedByThatPushNotPushedAgain(_ kind: StoreKind) throws {
        let (lab, device) = try provisioned(kind)
        let counts = try lab.passWithTriggerMidway(passAt: t0 + 1, triggerAt: t0 + 2, deviceID: device)
        #expect(counts["devices"] == 1 && counts["delivered"] == 2, "\(counts)")
        #expect(try lab.pushes() == 2)
        // Neither when the window after the push ends nor later.
        for later in [t0 + 40, t0 + 100] { #expect(try lab.counts(at: later)["pushes"] == 0) }
        #expect(try lab.pushes() == 2, "the trigger was observed, never another push")
        // A trigger after the window is pushed at once.
        #expect(try lab.run(at: t0 + 120, ["relay", "trigger", "--device-id", device]).exitCode == 0)
        #expect(try lab.counts(at: t0 + 120)["delivered"] == 2)
        #expect(try lab.pushes() == 4)
    }

    /// The pass's push left (its clock) 30 s or more before the trigger: that trigger is not inside its window, so it
    /// gets a push of its own, once the tokens' stamps let it.
    @Test(arguments: StoreKind.allCases) func aTriggerArrivingMidPass30SecondsAfterThePassBeganIsStillPushed(_ kind: StoreKind) throws {
        let (lab, device) = try provisioned(kind)
        let counts = try lab.passWithTriggerMidway(passAt: t0 + 1, triggerAt: t0 + 31, deviceID: device)
        #expect(counts["delivered"] == 2, "\(counts)")
        #expect(try lab.counts(at: t0 + 20)["pushes"] == 0, "not twice inside the window")
        #expect(try lab.counts(at: t0 + 40)["delivered"] == 2)
        #expect(try lab.pushes() == 4)
    }

    /// The pass did not push this Device ID's tokens (answered for its trigger before the pass: a pass stopped
    /// part-way left them), so a trigger recorded meanwhile, even one whose clock reads before the pass began, has no
    /// push after it and stays pending.
    @Test(arguments: StoreKind.allCases) func aTriggerArrivingMidPassForADeviceIDThePassDidNotPushStaysPendingEvenWithAnEarlierClock(_ kind: StoreKind) throws {
        let (lab, device) = try provisioned(kind)
        let other = MultiHostRelayChaos.deviceID(8)
        #expect(try lab.run(at: t0, ["relay", "register", "--device-id", other, "--apns-token", MultiHostRelayChaos.token(8, 0)]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "trigger", "--device-id", other]).exitCode == 0)
        let answeredAt = (t0 + 1) * 1000
        let db = try Database(path: lab.store.location)
        try db.execute("""
            UPDATE relay_tokens SET sent_at = ?, result_status = 200, result_at = ?
            WHERE device_id = (SELECT device_id FROM relay_tokens ORDER BY id LIMIT 1)
            """, [answeredAt, answeredAt])
        let counts = try lab.passWithTriggerMidway(passAt: t0 + 40, triggerAt: t0 + 39, deviceID: device, pushes: 1)
        #expect(counts["devices"] == 2 && counts["delivered"] == 1, "\(counts)")
        #expect(try lab.counts(at: t0 + 80)["delivered"] == 2, "the trigger recorded during the pass is pushed")
        #expect(try lab.counts(at: t0 + 120)["pushes"] == 0)
        #expect(try lab.pushes() == 3)
    }

    /// A pass that recorded its answers and stopped before consuming the trigger (killed, or its store went away)
    /// leaves the tokens answered for it, and the next pass consumes that trigger without pushing them again. The
    /// window then counts from the earlier pass's push, not from the later pass's clock: a trigger 30 s after that
    /// push is pushed, though it is less than 30 s after the later pass (found by the relay-multihost chaos run).
    @Test(arguments: StoreKind.allCases) func aTriggerConsumedAfterAPassStoppedBeforeConsumingCountsItsWindowFromThatPassesPush(_ kind: StoreKind) throws {
        let (lab, device) = try provisioned(kind)
        #expect(try lab.counts(at: t0 + 1)["delivered"] == 2)
        // What a pass stopped between recording its answers and consuming leaves: the trigger still pending.
        try Database(path: lab.store.location).execute("UPDATE relay_devices SET last_push_at = NULL")
        let next = try lab.counts(at: t0 + 33)
        #expect(next["devices"] == 1 && next["pushes"] == 0, "answered already, not pushed again: \(next)")
        // 39 s after the push, 7 s after the later pass's clock: outside the window, so pushed.
        #expect(try lab.run(at: t0 + 40, ["relay", "trigger", "--device-id", device]).exitCode == 0)
        #expect(try lab.counts(at: t0 + 41)["delivered"] == 2)
        #expect(try lab.pushes() == 4)
    }

    /// `RELAY_TRAILING_PUSH=on` keeps its documented behaviour: the trigger held back gets one more push when the
    /// window ends.
    @Test(arguments: StoreKind.allCases) func withTheTrailingPushOnATriggerArrivingMidPassGetsOneMorePushWhenTheWindowEnds(_ kind: StoreKind) throws {
        let (lab, device) = try provisioned(kind, trailingPush: true)
        let counts = try lab.passWithTriggerMidway(passAt: t0 + 1, triggerAt: t0 + 2, deviceID: device)
        #expect(counts["delivered"] == 2, "\(counts)")
        #expect(try lab.counts(at: t0 + 20)["pushes"] == 0)
        #expect(try lab.counts(at: t0 + 40)["delivered"] == 2)
        #expect(try lab.counts(at: t0 + 100)["pushes"] == 0)
        #expect(try lab.pushes() == 4)
    }
}
