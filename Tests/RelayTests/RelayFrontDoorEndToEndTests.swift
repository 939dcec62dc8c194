import Foundation
import Relay
import Runner
import Testing
import TestSupport

/// The whole wake-up path on loopback, every hop real: a Syncthing pair (the homeserver), `retrigger-stale`
/// with `RELAY_URL` at nginx, nginx (the shipped site, TLS), `serve-relay`, the store, the `send-wakeups` pass
/// serve-relay starts itself, and the APNs stand-in.
@Suite(.tags(.process, .postgres, .nginx, .syncthing), .timeLimit(.minutes(15))) struct RelayFrontDoorEndToEndTests {
    @Test(arguments: StoreKind.allCases) func aStalePeerOnTheHomeserverWakesEachProvisionedTokenExactlyOnceThroughNginxAndServeRelay(_ kind: StoreKind) throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        try #require(RelayFront.isNginxInstalled, "Debian's nginx package is required")
        let directory = TemporaryDirectory("frontdoor-e2e")
        let a = try SyncthingInstance(home: directory.file("a"))
        let b = try SyncthingInstance(home: directory.file("b"))
        defer { b.stop(); a.stop() }
        let folderA = directory.file("vault-a"), folderB = directory.file("vault-b")
        for (folder, file) in [(folderA, "from-a.md"), (folderB, "from-b.md")] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try "seed \(file)".write(toFile: folder + "/" + file, atomically: true, encoding: .utf8)
        }
        try a.configure(peers: [.init(deviceID: b.deviceID, listenPort: b.listenPort)], folders: [.init(id: "vault", path: folderA, devices: [b.deviceID])])
        try b.configure(peers: [.init(deviceID: a.deviceID, listenPort: a.listenPort)], folders: [.init(id: "vault", path: folderB, devices: [a.deviceID])])
        try a.start()
        try b.start()

        // The relay: APNs stand-in, serve-relay (pushes on) behind nginx, and the app provisioning A's Device ID
        // for two devices (iPhone and iPad) with a verified signed transaction — all while Syncthing connects.
        let apns = try APNsStandIn()
        defer { apns.stop() }
        let chain = try StoreKitChain()
        let front = try RelayFront(kind, chain: chain, extra: apns.environment())
        try front.startServer()
        try front.startNginx()
        defer { front.stop() }
        let jws = try chain.jws(StoreKitChain.payload(now: Date()))
        let tokens = [Fixture.token(61), Fixture.token(62)]
        for token in tokens {
            let answer = try front.send("POST", "/api/v1/provision", ["device_id": a.deviceID, "apns_token": token, "transaction_id": jws])
            #expect(answer.status == 200, "\(answer.json)")
            #expect(answer.response.header("Server") == "nginx", "nginx does not disclose its version (server_tokens off)")
        }

        try a.wait(timeout: 60, "A and B to connect") { try a.isConnected(to: b.deviceID) && b.isConnected(to: a.deviceID) }
        try a.wait(timeout: 60, "the seed files to sync") {
            let need = try a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int
            return FileManager.default.fileExists(atPath: folderA + "/from-b.md") && FileManager.default.fileExists(atPath: folderB + "/from-a.md") && need == 0
        }
        let h = try RelayHarness(environment: ["HOME": directory.path, "STHOMEDIR": a.home, "RELAY_URL": front.url, "RELAY_CA_FILE": front.caFile])
        let inSync = try h.pass("retrigger-stale", now: Date())
        #expect(inSync.exitCode == .success && inSync.result.counts["triggered"] == 0, "\(inSync.error?.message ?? "")")

        // B falls behind: one trigger goes through nginx to serve-relay, which starts send-wakeups at once.
        try b.setFolder("vault", paused: true)
        try "new".write(toFile: folderA + "/new.md", atomically: true, encoding: .utf8)
        try a.rescan("vault")
        try a.wait(timeout: 30, "A to see that B needs the new file") { (try a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int ?? 0) > 0 }
        let sent = Date()
        let behind = try h.pass("retrigger-stale", now: Date())
        #expect(behind.exitCode == .success && behind.result.counts["triggered"] == 1, "\(behind.error?.message ?? "") \(behind.result.counts)")
        try a.wait(timeout: 10, "the pushes to reach the APNs stand-in") { try apns.received().count >= 2 }
        let latency = Date().timeIntervalSince(sent)
        usleep(1_500_000)  // nothing more may follow
        let pushes = try apns.received()
        #expect(pushes.count == 2)
        #expect(Set(pushes.compactMap { $0["token"] as? String }) == Set(tokens), "exactly one push for each provisioned token")
        #expect(pushes.allSatisfy { $0["push_type"] as? String == "background" && $0["priority"] as? String == "5" })
        #expect(latency < 10, "trigger to APNs within 10 s (not waiting for a timer)")
        print("frontdoor-e2e: retrigger-stale → APNs stand-in in \(Int(latency * 1000)) ms")

        let output = front.serverOutput + h.everything
        for canary in [a.deviceID, tokens[0], tokens[1], jws, a.apiKey] { #expect(!output.contains(canary)) }
    }
}
