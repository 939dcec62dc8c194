import Chaos
import Foundation
import Testing
import TestSupport

/// Found by the multi-host chaos run: `send-wakeups` passes on several hosts over one PostgreSQL store
/// read their clocks at slightly different moments, so each sees what the others wrote a few seconds "in the
/// future". That is no clock that went backwards, and moving those times back must not lose a trigger.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct MultiHostClockTests {
    @Test func aPassWhoseClockIsSecondsBehindAnotherHostsMovesNothingBackAndTheNextTriggerIsStillPushed() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let lab = try PostgresRelayLab("clock")
        let (standIn, t0) = (lab.standIn, lab.t0)
        let device = MultiHostRelayChaos.deviceID(7), token = MultiHostRelayChaos.token(7, 0)
        #expect(try lab.run(at: t0, ["migrate"]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "register", "--device-id", device, "--apns-token", token]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "trigger", "--device-id", device]).exitCode == 0)

        // Host A pushes at t0+10; the homeserver triggers again at t0+50.
        let first = try lab.run(at: t0 + 10, ["send-wakeups"])
        #expect(first.exitCode == 0 && ChaosProcess.counts(first.stdout)["delivered"] == 1, "\(first.stdout) \(first.stderr)")
        #expect(try lab.run(at: t0 + 50, ["relay", "trigger", "--device-id", device]).exitCode == 0)

        // Host B's pass read its clock 5 s behind host A's push: inside the window, nothing to push, nothing to repair.
        let behind = try lab.run(at: t0 + 5, ["send-wakeups"])
        #expect(behind.exitCode == 0 && ChaosProcess.counts(behind.stdout)["pushes"] == 0, "\(behind.stdout) \(behind.stderr)")
        #expect(!behind.stderr.contains("clock.stored_time_in_future"), "\(behind.stderr)")

        // After the window, the trigger of t0+50 is pushed.
        let after = try lab.run(at: t0 + 60, ["send-wakeups"])
        #expect(after.exitCode == 0 && ChaosProcess.counts(after.stdout)["delivered"] == 1, "\(after.stdout) \(after.stderr)")
        #expect(try standIn.requests(since: 0).compactMap { $0["token"] as? String } == [token, token])
    }
}
