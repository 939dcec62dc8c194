import Foundation
import Runner
import Testing
import TestSupport
@testable import Homeserver

/// The helper's side of authenticated triggers (docs/protocols/trigger-v2.md, "The helper"): `retrigger-stale` signs
/// with the real Syncthing's own key, the relay pins it, and then it never sends v1; without a readable key it sends
/// v1 and doctor warns; a relay without the v2 route gets v1.
@Suite(.serialized, .tags(.process, .postgres, .nginx, .syncthing), .timeLimit(.minutes(15))) struct TriggerV2HelperTests {
    typealias Homeserver = OnePeerHomeserver

    /// Moves Syncthing's key.pem aside (as an unreadable key looks to the helper) until `restore` is called.
    func hideKey(_ home: Homeserver) throws -> () -> Void {
        let key = home.syncthing.home + "/key.pem"
        try FileManager.default.moveItem(atPath: key, toPath: key + ".hidden")
        return { try? FileManager.default.moveItem(atPath: key + ".hidden", toPath: key) }
    }

    @Test func retriggerStaleSendsAnAuthenticatedTriggerThatServeRelayAcceptsAndThenNeverFallsBackToV1() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let front = try RelayFront(.sqlite, chain: nil)
        let registered = try JobProcess.run(["--store", front.store, "relay", "register", "--device-id", home.syncthing.deviceID,
                                             "--apns-token", Fixture.token(260)], environment: front.environment)
        #expect(registered.exitCode == 0, "\(registered.stderr)")
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }

        let h = try RelayHarness(environment: home.environment(relay: "http://127.0.0.1:\(port)", ["STALE_RETRIGGER_SECONDS": "60"]))
        let now = Date()
        let first = try h.pass("retrigger-stale", now: now)
        #expect(first.result.counts["triggered"] == 1 && first.result.counts["authenticated"] == 1, "\(first.result.counts) \(h.everything)")
        let shown = try JobProcess.run(["--store", front.store, "--json", "relay", "show"], environment: front.environment).jsonObject()
        #expect(shown["devices_pinned_to_v2"] as? Int == 1 && shown["devices_awaiting_push"] as? Int == 1, "\(shown)")
        #expect(try h.database().scalar("SELECT v2_accepted_at FROM relay_helper_state") == now.unixMilliseconds)
        // The v1 route now refuses this Device ID: a captured Device ID buys nothing.
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": home.syncthing.deviceID], base: "http://127.0.0.1:\(port)").status == 401)

        // Pinned: with its key unreadable the helper refuses to send v1 (78, saying why) instead of falling back.
        let restore = try hideKey(home)
        let refused = try h.pass("retrigger-stale", now: now.addingTimeInterval(61))
        #expect(refused.exitCode == .configuration && refused.error?.message.contains("never sends v1") == true, "\(refused.error?.message ?? "")")
        let doctor = #expect(throws: JobError.self) { try h.command(["doctor"], now: now.addingTimeInterval(61)) }
        #expect(doctor != nil && h.everything.contains("FAIL  device-key: this helper is pinned to authenticated triggers"), "\(h.everything)")
        restore()
        let again = try h.pass("retrigger-stale", now: Date().addingTimeInterval(1))
        #expect(again.result.counts["authenticated"] == 1 || again.result.outcome == .skipped, "\(again.result.counts)")
        #expect(!h.everything.contains(home.syncthing.deviceID), "no Device ID in the helper's logs")
    }

    @Test func withoutAReadableKeyTheHelperSendsV1AndDoctorWarnsWithTheFix() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let restore = try hideKey(home)
        defer { restore() }
        let h = try RelayHarness(environment: home.environment(relay: relay.url))
        let pass = try h.pass("retrigger-stale", now: Fixture.t0)
        #expect(pass.result.counts["triggered"] == 1 && pass.result.counts["authenticated"] == 0)
        #expect(relay.triggers.count == 1 && relay.triggers.first?["body"] as? [String: String] == ["device_id": home.syncthing.deviceID])
        #expect(try relay.received().allSatisfy { $0["path"] as? String != "/api/v2/trigger" }, "no v2 attempt without a key")
        #expect(h.everything.contains("relay.device_key_unusable") && h.everything.contains("key-unreadable"))
        _ = try? h.command(["doctor"], now: Fixture.t0)
        #expect(h.everything.contains("WARN  device-key: triggers are sent unauthenticated (v1): key.pem beside config.xml cannot be read"), "\(h.everything)")
    }

    @Test func aRelayWithoutTheV2RouteGetsV1AndIsNotProbedAgainWithinACadence() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        // The stand-in predates v2 (404 on /api/v2/trigger); its v1 route fails once, then accepts.
        let relay = try RelayStandIn(trigger: [RelayStandIn.Answer(status: 503), RelayStandIn.Answer(status: 202)])
        defer { relay.stop() }
        let h = try RelayHarness(environment: home.environment(relay: relay.url, ["STALE_RETRIGGER_SECONDS": "600"]))
        let pass = try h.pass("retrigger-stale", now: Fixture.t0)
        #expect(pass.result.counts["triggered"] == 1 && pass.result.counts["authenticated"] == 0, "\(pass.result.counts)")
        // One v2 probe (404), then v1 twice: the retry after the 503 did not probe v2 again.
        #expect(try relay.received().compactMap { $0["path"] as? String } == ["/api/v2/trigger", "/api/v1/trigger", "/api/v1/trigger"])
        #expect(try h.database().scalar("SELECT v2_unsupported_at FROM relay_helper_state") == Fixture.t0.unixMilliseconds)
        _ = try? h.command(["doctor"], now: Fixture.t0)
        #expect(h.everything.contains("WARN  relay-v2: the relay answered the authenticated trigger route with 404/405"), "\(h.everything)")

        // One cadence later v2 is tried again.
        _ = try h.pass("retrigger-stale", now: Fixture.t0.addingTimeInterval(601))
        #expect(try relay.received().filter { $0["path"] as? String == "/api/v2/trigger" }.count == 2)
    }
}

/// End to end with the real pieces: a file change in a real Syncthing → `watch-syncthing` signs a v2 trigger with that
/// Syncthing's own key → nginx → a pushing `serve-relay` → the APNs stand-in gets the push, and `/status` says the
/// last signal was authenticated.
@Suite(.serialized, .tags(.process, .postgres, .nginx, .syncthing), .timeLimit(.minutes(15))) struct TriggerV2EndToEndTests {
    @Test func aFileChangeSendsAnAuthenticatedTriggerThatPushesAndStatusSaysAuthenticated() throws {
        try #require(SyncthingInstance.isInstalled && RelayFront.isNginxInstalled, "Debian's syncthing and nginx packages are required")
        let home = try WatchedHomeserver()
        defer { home.syncthing.stop() }
        let apns = try APNsStandIn()
        defer { apns.stop() }
        let chain = try StoreKitChain()
        let front = try RelayFront(.sqlite, chain: chain, extra: apns.environment())
        try front.startServer()
        try front.startNginx()
        defer { front.stop() }
        let jws = try chain.jws(StoreKitChain.payload(now: Date()))
        let device = home.syncthing.deviceID
        #expect(try front.send("POST", "/api/v1/provision", ["device_id": device, "apns_token": Fixture.token(270), "transaction_id": jws]).status == 200)

        let m = try RelayMachine(environment: home.environment(relay: front.url, ["RELAY_CA_FILE": front.caFile]))
        let watcher = try WatchedHomeserver.subscribed(m.start(["watch-syncthing"]))
        defer { watcher.signal(SIGKILL) }
        try home.change("vault")
        try WatchedHomeserver.waitFor(15, "a push at the APNs stand-in: \(watcher.stderrSoFar)") { try apns.received().count == 1 }
        let status = try front.send("POST", "/api/v1/status", ["device_id": device, "signed_transaction": jws])
        #expect(status.status == 200 && status.json["last_trigger_authenticated"] as? Bool == true, "\(status.json)")
        #expect(watcher.stderrSoFar.contains("\"authenticated\":true") || watcher.stderrSoFar.contains("authenticated=true"), "\(watcher.stderrSoFar)")
        // The relay pinned the Device ID: v1 for it is refused from now on.
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device]).status == 401)
        watcher.signal(SIGTERM)
        _ = try? watcher.wait(timeout: 10)
        #expect(!front.serverOutput.contains(device))
    }
}
