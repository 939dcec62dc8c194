import Cryptography
import Foundation
import Runner
import Store
import Testing
import TestSupport
@testable import Relay

/// `job relay register|unregister|trigger|show` over a real store file.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct RegistrationTests {
    @Test(arguments: StoreKind.allCases) func oneDeviceHoldsSeveralTokensAndReRegisteringRefreshesTheTime(_ kind: StoreKind) throws {
        let h = try RelayHarness(kind)
        let device = Fixture.deviceID(1)
        try h.register(device, Fixture.token(1), now: Fixture.t0)
        try h.register(device, Fixture.token(2), environment: "sandbox", now: Fixture.t0)
        let later = Fixture.t0.addingTimeInterval(600)
        let again = try h.command(["relay", "register"], ["--device-id", device.lowercased(), "--apns-token", Fixture.token(1).uppercased()], now: later, json: true)
        #expect(again.contains("\"refreshed\""))
        let db = try h.database()
        #expect(try db.scalar("SELECT count(*) FROM relay_devices") == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens") == 2)
        let times: [Int64] = try db.query("SELECT registered_at FROM relay_tokens ORDER BY registered_at").map { try $0.get(0) }
        #expect(times == [Fixture.t0.unixMilliseconds, later.unixMilliseconds])
        let show = try h.command(["relay", "show"], now: later, json: true)
        #expect(show.contains("\"devices\":1,\"tokens\":2,\"production_tokens\":1,\"sandbox_tokens\":1"))
    }

    @Test(arguments: StoreKind.allCases) func tokensAndDeviceIDsAreNeverStoredInTheClear(_ kind: StoreKind) throws {
        let h = try RelayHarness(kind)
        let device = Fixture.deviceID(2)
        let token = Fixture.token(7)
        try h.register(device, token, now: Fixture.t0)
        try h.command(["relay", "trigger"], ["--device-id", device], now: Fixture.t0)
        let db = try h.database()
        let bytes = try h.store.storedBytes()
        #expect(bytes.count > 0)
        let file = String(decoding: bytes, as: UTF8.self)
        #expect(!file.contains(token) && !file.contains(device) && !file.contains(device.replacingOccurrences(of: "-", with: "")))
        #expect(bytes.range(of: Data(try Hex.decode(token))) == nil)
        // The sealed token opens under the store key, and only for its purpose.
        let sealed: [UInt8] = try #require(try db.scalar("SELECT token_sealed FROM relay_tokens"))
        let registry = Registry(database: db, keyring: try h.keyring())
        #expect(try registry.keyring.open(sealed, purpose: Registry.tokenPurpose).copyBytes() == Array(token.utf8))
        #expect(throws: (any Error).self) { try registry.keyring.open(sealed, purpose: "other") }
        #expect(!h.everything.contains(token) && !h.everything.contains(device))
    }

    @Test(arguments: StoreKind.allCases) func unregisterRemovesOneTokenAndTheDeviceWithItsLast(_ kind: StoreKind) throws {
        let h = try RelayHarness(kind)
        let device = Fixture.deviceID(3)
        try h.register(device, Fixture.token(1), now: Fixture.t0)
        try h.register(device, Fixture.token(2), now: Fixture.t0)
        #expect(try h.command(["relay", "unregister"], ["--device-id", device, "--apns-token", Fixture.token(1)], now: Fixture.t0) == "deprovisioned\n")
        #expect(try h.command(["relay", "unregister"], ["--device-id", device, "--apns-token", Fixture.token(1)], now: Fixture.t0) == "not registered; nothing changed\n")
        // Another device's token under this device is not touched.
        #expect(try h.command(["relay", "unregister"], ["--device-id", Fixture.deviceID(4), "--apns-token", Fixture.token(2)], now: Fixture.t0).hasPrefix("not registered"))
        let db = try h.database()
        #expect(try db.scalar("SELECT count(*) FROM relay_devices") == 1)
        try h.command(["relay", "unregister"], ["--device-id", device, "--apns-token", Fixture.token(2)], now: Fixture.t0)
        #expect(try db.scalar("SELECT count(*) FROM relay_devices") == 0)
    }

    @Test(arguments: StoreKind.allCases) func aTriggerStoresTheObservationTimeOnlyForARegisteredDevice(_ kind: StoreKind) throws {
        let h = try RelayHarness(kind)
        let device = Fixture.deviceID(5)
        let error = #expect(throws: JobError.self) { try h.command(["relay", "trigger"], ["--device-id", device], now: Fixture.t0) }
        #expect(error?.exitCode == .dataError)
        #expect(error.map { !$0.message.contains(device) } == true)
        try h.register(device, Fixture.token(1), now: Fixture.t0)
        let t1 = Fixture.t0.addingTimeInterval(5)
        try h.command(["relay", "trigger"], ["--device-id", device], now: t1)
        // An older observation never moves the time backwards.
        try h.command(["relay", "trigger"], ["--device-id", device], now: Fixture.t0)
        #expect(try h.database().scalar("SELECT last_trigger_at FROM relay_devices") == t1.unixMilliseconds)
    }

    @Test(arguments: StoreKind.allCases) func malformedOptionsAreRefusedWithoutEchoingThemOrWritingAnything(_ kind: StoreKind) throws {
        let h = try RelayHarness(kind)
        let cases: [([String], [String], ExitCode)] = [
            (["relay", "register"], ["--device-id", "NOT-A-DEVICE", "--apns-token", Fixture.token(1)], .dataError),
            (["relay", "register"], ["--device-id", Fixture.deviceID(1), "--apns-token", "xyz-secret"], .dataError),
            (["relay", "register"], ["--device-id", Fixture.deviceID(1), "--apns-token", Fixture.token(1), "--environment", "staging"], .usage),
            (["relay", "register"], ["--device-id", Fixture.deviceID(1)], .usage),
            (["relay", "trigger"], [], .usage),
        ]
        for (path, tokens, code) in cases {
            let error = #expect(throws: JobError.self) { try h.command(path, tokens, now: Fixture.t0) }
            #expect(error?.exitCode == code, "\(tokens)")
            #expect(error.map { !$0.message.contains("NOT-A-DEVICE") && !$0.message.contains("xyz-secret") } == true)
        }
        #expect(try h.database().scalar("SELECT count(*) FROM relay_tokens") == 0)
    }
}

extension RelayHarness {
    /// The keyring under this store's key.
    func keyring() throws -> StoreKeyring {
        let key = try StoreKeyLocation.resolve(environment: environment, storePath: job.storePath).load()
        return try StoreKeyring(storeKey: key)
    }
}
