import Foundation
import Testing
import TestSupport

/// The relay module wired into the real `job` binary: its jobs are listed, its commands run, errors keep
/// their documented exit codes and say nothing identifying on stderr.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct EndToEndRelayTests {
    @Test(arguments: StoreKind.allCases) func theBuiltJobRunsTheRelayCommandsWithTheirExitCodes(_ kind: StoreKind) throws {
        let home = TemporaryDirectory("e2e-relay")
        let testStore = try TestStore.make(kind, in: home)
        let env = JobProcess.environment(home: home.path, testStore.environment)
        let store = ["--store", testStore.location]
        let list = try JobProcess.run(store + ["list"], environment: env)
        #expect(list.exitCode == 0)
        for name in ["retrigger-stale", "send-wakeups", "clean-tokens"] { #expect(list.stdout.contains(name)) }

        let device = Fixture.deviceID(5), token = Fixture.token(5)
        let registered = try JobProcess.run(store + ["--json", "relay", "register", "--device-id", device, "--apns-token", token, "--environment", "sandbox"], environment: env)
        #expect(registered.exitCode == 0 && registered.stdout == "{\"status\":\"created\",\"environment\":\"sandbox\",\"entitlement\":\"operator\"}\n")
        let unknown = try JobProcess.run(store + ["relay", "trigger", "--device-id", Fixture.deviceID(6)], environment: env)
        #expect(unknown.exitCode == 65 && unknown.stderr.contains("no registration for this Device ID"))
        let usage = try JobProcess.run(store + ["relay", "register", "--device-id", device], environment: env)
        #expect(usage.exitCode == 64)
        #expect(try JobProcess.run(store + ["relay", "trigger", "--device-id", device], environment: env).exitCode == 0)
        let shown = try JobProcess.run(store + ["--json", "relay", "show"], environment: env)
        #expect(try shown.jsonObject()["devices_awaiting_push"] as? Int == 1)
        // send-wakeups without its APNs settings: 78, naming the variable only.
        let unconfigured = try JobProcess.run(store + ["send-wakeups"], environment: env)
        #expect(unconfigured.exitCode == 78 && unconfigured.stderr.contains("APNS_KEY_FILE is not set"))
        let doctor = try JobProcess.run(store + ["doctor"], environment: env.merging(["SYNCTHING_API_URL": "http://127.0.0.1:9"]) { $1 })
        #expect(doctor.exitCode == 78 && doctor.stdout.contains("FAIL  relay-url"))
        let relayServerDoctor = try JobProcess.run(store + ["doctor"], environment: env)
        #expect(relayServerDoctor.exitCode == 0 && relayServerDoctor.stdout.contains("skip  retrigger-stale: not configured here"), "\(relayServerDoctor.stdout)")
        for output in [registered, unknown, usage, shown, unconfigured, doctor] {
            #expect(!output.stdout.contains(device) && !output.stderr.contains(device) && !output.stderr.contains(token))
        }
    }
}
