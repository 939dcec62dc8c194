import Chaos
import Foundation
import Store
import Testing
import TestSupport

/// A Device ID's push time (`relay_devices.last_push_at`) is only ever the clock of a pass that pushed it: a pass
/// whose pushes got no answer from APNs (a transport failure: they may never have left) consumes nothing, so the
/// window after a push never counts from a push that was not made (docs/roles/relay.md, "A trigger inside the
/// window…"). Through the real `job` binary, on SQLite and PostgreSQL.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct PushTimeTests {
    let t0: Int64 = 1_790_000_000

    @Test(arguments: StoreKind.allCases) func aPassWhosePushesGotNoAnswerLeavesThePushTimeUnsetAndTheTriggerPendingForTheNextPass(_ kind: StoreKind) throws {
        let (lab, device) = try MidPassTriggerTests().provisioned(kind)
        // APNs unreachable for this pass: a closed loopback port.
        var unreachable = lab.environment
        unreachable["APNS_URL"] = "https://127.0.0.1:9"
        unreachable["APNS_SANDBOX_URL"] = "https://127.0.0.1:9"
        let failed = try JobProcess.run(lab.arguments(at: t0 + 1, ["send-wakeups"]), environment: unreachable)
        #expect(failed.exitCode != 0 && ChaosProcess.counts(failed.stdout)["transport_failures"] == 2, "\(failed.stdout) \(failed.stderr)")
        #expect(try lab.pushes() == 0)
        let db = try Database(path: lab.store.location)
        let pushTime = { try db.queryOne("SELECT last_push_at FROM relay_devices")?.get(0, as: Int64?.self) }
        #expect(try pushTime() == nil, "no push was made, so no push time")
        // The next pass once the stamps' window has passed pushes both tokens, and its clock is the push time.
        #expect(try lab.counts(at: t0 + 32)["delivered"] == 2)
        #expect(try pushTime() == (t0 + 32) * 1000)
        // A trigger inside that push's window is observed, never another push; one after it is pushed.
        #expect(try lab.run(at: t0 + 50, ["relay", "trigger", "--device-id", device]).exitCode == 0)
        #expect(try lab.counts(at: t0 + 70)["pushes"] == 0)
        #expect(try lab.run(at: t0 + 63, ["relay", "trigger", "--device-id", device]).exitCode == 0)
        #expect(try lab.counts(at: t0 + 70)["delivered"] == 2)
        #expect(try lab.pushes() == 4)
    }
}
