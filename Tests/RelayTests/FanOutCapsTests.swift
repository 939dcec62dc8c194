import Foundation
import Runner
import Testing
import TestSupport

/// The fan-out caps of `job serve-relay` (docs/roles/relay.md, "Fan-out caps"): Device IDs per subscription (one
/// more is refused with 403 `too-many-devices` and stores nothing) and live tokens per Device ID (a new token beyond
/// the cap replaces the oldest), with defaults 10 and 10 and settings that change them.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct FanOutCapsTests {
    func provision(_ front: RelayFront, _ device: String, _ token: String, _ jws: String) throws -> (status: Int, json: [String: Any]) {
        let answer = try front.send("POST", "/api/v1/provision", ["device_id": device, "apns_token": token, "transaction_id": jws], base: front.directURL)
        return (answer.status, answer.json)
    }

    func trigger(_ front: RelayFront, _ device: String) throws -> (status: Int, json: [String: Any]) {
        let answer = try front.send("POST", "/api/v1/trigger", ["device_id": device], base: front.directURL)
        return (answer.status, answer.json)
    }

    @Test(arguments: StoreKind.allCases) func byDefaultTenDeviceIdsPerSubscriptionAndTenTokensPerDeviceIdTheOldestTokenReplaced(_ kind: StoreKind) throws {
        let chain = try StoreKitChain()
        let front = try RelayFront(kind, chain: chain)
        try front.startServer(["--no-push"])
        defer { front.stop() }
        let jws = try chain.jws(StoreKitChain.payload(now: Date()))
        for n in 0..<10 {
            let answer = try provision(front, Fixture.deviceID(100 + n), Fixture.token(100 + n), jws)
            #expect(answer.status == 200, "Device ID \(n): \(answer.status) \(answer.json)")
        }
        // The eleventh Device ID of this subscription is refused and gets nothing.
        let eleventh = try provision(front, Fixture.deviceID(110), Fixture.token(110), jws)
        #expect(eleventh.status == 403 && eleventh.json["error"] as? String == "too-many-devices", "\(eleventh.status) \(eleventh.json)")
        #expect(try trigger(front, Fixture.deviceID(110)).status == 403, "the refused Device ID was not provisioned")
        // A Device ID already counted may provision again, and another subscription is not held by this one's cap.
        #expect(try provision(front, Fixture.deviceID(100), Fixture.token(100), jws).status == 200)
        let other = try chain.jws(StoreKitChain.payload(now: Date(), original: "2000000999999999"))
        #expect(try provision(front, Fixture.deviceID(110), Fixture.token(110), other).status == 200)

        // Tokens: Device ID 101 holds token 101; ten more arrive. The first (oldest) is replaced, the newest ten stay.
        let device = Fixture.deviceID(101)
        for n in 1...10 { #expect(try provision(front, device, Fixture.token(1000 + n), jws).status == 200) }
        let fanned = try trigger(front, device)
        #expect(fanned.status == 202 && fanned.json["devices_notified"] as? Int == 10, "\(fanned.status) \(fanned.json)")
        // Removing the oldest token changes nothing (it was the one replaced); removing a kept one leaves nine.
        #expect(try front.send("DELETE", "/api/v1/provision", ["device_id": device, "apns_token": Fixture.token(101)], base: front.directURL).status == 200)
        #expect(try trigger(front, device).json["devices_notified"] as? Int == 10)
        #expect(try front.send("DELETE", "/api/v1/provision", ["device_id": device, "apns_token": Fixture.token(1001)], base: front.directURL).status == 200)
        #expect(try trigger(front, device).json["devices_notified"] as? Int == 9)
        let shown = try JobProcess.run(["--store", front.store, "--json", "relay", "show"], environment: front.environment)
        #expect(try shown.jsonObject()["devices"] as? Int == 11, "ten of one subscription, one of the other: \(shown.stdout)")
    }

    @Test func theCapsAreSettingsAndABadValueExits78() throws {
        let chain = try StoreKitChain()
        let front = try RelayFront(.sqlite, chain: chain, extra: ["RELAY_MAX_DEVICES_PER_SUBSCRIPTION": "2", "RELAY_MAX_TOKENS_PER_DEVICE": "1"])
        try front.startServer(["--no-push"])
        defer { front.stop() }
        let jws = try chain.jws(StoreKitChain.payload(now: Date()))
        #expect(try provision(front, Fixture.deviceID(120), Fixture.token(120), jws).status == 200)
        #expect(try provision(front, Fixture.deviceID(121), Fixture.token(121), jws).status == 200)
        #expect(try provision(front, Fixture.deviceID(122), Fixture.token(122), jws).json["error"] as? String == "too-many-devices")
        #expect(try provision(front, Fixture.deviceID(120), Fixture.token(123), jws).status == 200)
        #expect(try trigger(front, Fixture.deviceID(120)).json["devices_notified"] as? Int == 1, "the new token replaced the old one")

        for bad in ["0", "1001", "ten", "5x"] {
            let refused = try JobProcess.run(["--store", front.store, "serve-relay", "--listen", "127.0.0.1:0"],
                                             environment: front.environment.merging(["RELAY_MAX_TOKENS_PER_DEVICE": bad]) { $1 })
            #expect(refused.exitCode == 78 && refused.stderr.contains("RELAY_MAX_TOKENS_PER_DEVICE must be a whole number from 1 to 1000"),
                    "\(bad): \(refused.exitCode) \(refused.stderr)")
        }
        let devices = try JobProcess.run(["--store", front.store, "serve-relay", "--listen", "127.0.0.1:0"],
                                         environment: front.environment.merging(["RELAY_MAX_DEVICES_PER_SUBSCRIPTION": "-3"]) { $1 })
        #expect(devices.exitCode == 78 && devices.stderr.contains("RELAY_MAX_DEVICES_PER_SUBSCRIPTION must be"), "\(devices.stderr)")
    }
}
