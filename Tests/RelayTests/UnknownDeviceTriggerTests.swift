import Foundation
import Runner
import Store
import Testing
import TestSupport

/// Work an attacker can pick (docs/roles/relay.md, "Unknown Device IDs"): a trigger for a Device ID the relay does
/// not know, or one with no live token, is refused with 403 and writes nothing — no rate-limit row is committed,
/// and on SQLite it costs no commit of the group-commit writer.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct UnknownDeviceTriggerTests {
    @Test(arguments: StoreKind.allCases) func triggersForUnknownOrUnprovisionedDeviceIdsWriteNothingAndCostNoCommit(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        let known = Fixture.deviceID(300), emptied = Fixture.deviceID(301)
        for (device, token) in [(known, Fixture.token(300)), (emptied, Fixture.token(301))] {
            let registered = try JobProcess.run(["--store", front.store, "relay", "register", "--device-id", device, "--apns-token", token],
                                                environment: front.environment)
            #expect(registered.exitCode == 0, "\(registered.stderr)")
        }
        let removed = try JobProcess.run(["--store", front.store, "relay", "unregister", "--device-id", emptied, "--apns-token", Fixture.token(301)],
                                         environment: front.environment)
        #expect(removed.exitCode == 0, "\(removed.stderr)")
        try front.startServer(["--no-push"])

        // More than the per-Device-ID limit for one unknown Device ID, and many distinct ones: each 403 at once.
        let unknown = (0..<30).map { Fixture.deviceID(400 + $0) } + Array(repeating: Fixture.deviceID(500), count: 15) + [emptied, emptied]
        for device in unknown {
            let answer = try front.send("POST", "/api/v1/trigger", ["device_id": device], base: front.directURL)
            #expect(answer.status == 403 && answer.json["error"] as? String == "no-active-subscription", "\(answer.status) \(answer.json)")
        }
        // A genuine trigger still counts and is stored.
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": known], base: front.directURL).status == 202)

        let db = try Database(path: front.store)
        let rows: Int = try db.scalar("SELECT count(*) FROM relay_rate_limits") ?? -1
        #expect(rows == 1, "only the genuine trigger's rate-limit row: \(rows)")
        let logs = front.stop().map(\.stderr).joined(separator: "\n")
        if kind == .sqlite {
            let line = try #require(logs.split(separator: "\n").first { $0.contains("event=relay-api.stopped") })
            #expect(line.contains(" commits=1"), "one commit, the genuine trigger's: \(line)")
        }
    }
}
