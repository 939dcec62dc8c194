import Foundation
import Runner
import Testing
import TestSupport
@testable import Homeserver

/// `retrigger-stale` between two real Syncthing instances on loopback. A serves its GUI with `tls="true"`,
/// so every pass here also goes through the pinned self-signed `https-cert.pem`.
@Suite(.tags(.process, .postgres, .syncthing), .timeLimit(.minutes(15))) struct SyncthingPairTests {
    let t0 = Fixture.t0
    let cadence: TimeInterval = 21_600

    @Test func theHelperTriggersExactlyWhileThePeerNeedsDataAndSkipsPausedDevicesAndFolders() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let directory = TemporaryDirectory("stpair")
        let a = try SyncthingInstance(home: directory.file("a"), tls: true)
        let b = try SyncthingInstance(home: directory.file("b"))
        defer { b.stop(); a.stop() }
        let folderA = directory.file("vault-a"), folderB = directory.file("vault-b")
        for (folder, file) in [(folderA, "from-a.md"), (folderB, "from-b.md")] {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try "seed \(file)".write(toFile: folder + "/" + file, atomically: true, encoding: .utf8)
        }
        try a.configure(peers: [.init(deviceID: b.deviceID, listenPort: b.listenPort)], folders: [.init(id: "vault", path: folderA, devices: [b.deviceID])])
        try b.configure(peers: [.init(deviceID: a.deviceID, listenPort: a.listenPort)], folders: [.init(id: "vault", path: folderB, devices: [a.deviceID])])
        // One after the other: started together, 1.19 can fail the Hello exchange and redial only much later.
        try a.start()
        try b.start()
        try a.wait(timeout: 60, "A and B to connect") { try a.isConnected(to: b.deviceID) && b.isConnected(to: a.deviceID) }
        // Each side announces a file first: 1.19 tracks no need for a device whose index sequence is 0.
        try a.wait(timeout: 60, "the seed files to sync") {
            let need = try a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int
            return FileManager.default.fileExists(atPath: folderA + "/from-b.md") && FileManager.default.fileExists(atPath: folderB + "/from-a.md") && need == 0
        }

        let relay = try RelayStandIn()
        defer { relay.stop() }
        let h = try HelperHarness(environment: ["HOME": directory.path, "STHOMEDIR": a.home, "RELAY_URL": relay.url])

        // job doctor: every preflight check passes; it sends a trigger only with --send-trigger.
        let report = try h.command(["doctor"], now: t0, json: true)
        let checks = try #require((try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])?["checks"] as? [[String: Any]])
        let helperChecks = checks.filter { $0["group"] as? String == "retrigger-stale" }
        #expect(helperChecks.map { $0["status"] as? String } == ["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "skip"], "\(report)")
        #expect(helperChecks.contains { $0["name"] as? String == "event-stream" && $0["status"] as? String == "ok" }, "\(report)")
        #expect(checks.filter { $0["group"] as? String == "store" }.allSatisfy { $0["status"] as? String != "FAIL" }, "\(report)")
        #expect(relay.triggers.isEmpty)
        let sending = try h.command(["doctor"], ["--send-trigger"], now: t0)
        // The stand-in has no v2 route, so the helper's trigger goes out as v1.
        #expect(sending.contains("ok    trigger: the relay accepted the v1 trigger (202)"), "\(sending)")
        #expect(relay.triggers.count == 1)
        try relay.script(trigger: [.init(status: 202)])

        // In sync: checked over pinned https, nothing sent.
        let inSync = try h.pass("retrigger-stale", now: t0)
        #expect(inSync.exitCode == .success, "\(inSync.error?.message ?? "")")
        #expect(inSync.result.counts["peers_checked"] == 1 && inSync.result.counts["peers_behind"] == 0 && inSync.result.counts["triggered"] == 0)
        #expect(relay.triggers.count == 1)

        // B pauses the folder, A gets a new file: B now needs data → exactly one trigger with A's Device ID.
        try b.setFolder("vault", paused: true)
        try "new".write(toFile: folderA + "/new.md", atomically: true, encoding: .utf8)
        try a.rescan("vault")
        try a.wait(timeout: 30, "A to see that B needs the new file") {
            (try a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int ?? 0) > 0
        }
        let behind = try h.pass("retrigger-stale", now: t0.addingTimeInterval(1))
        #expect(behind.result.counts["peers_behind"] == 1 && behind.result.counts["triggered"] == 1)
        #expect(relay.triggers.count == 2)
        #expect((relay.triggers.last?["body"] as? [String: Any])?["device_id"] as? String == a.deviceID)

        // A paused device is skipped, even though it still needs data.
        try a.setDevice(b.deviceID, paused: true)
        let pausedDevice = try h.pass("retrigger-stale", now: t0.addingTimeInterval(cadence + 1))
        #expect(pausedDevice.result.counts["paused_devices"] == 1 && pausedDevice.result.counts["peers_checked"] == 0)
        #expect(pausedDevice.result.counts["triggered"] == 0)
        try a.setDevice(b.deviceID, paused: false)

        // A folder paused on A is skipped (the per-folder walk; the 1.19 aggregate call would answer 404).
        try a.setFolder("vault", paused: true)
        let pausedFolder = try h.pass("retrigger-stale", now: t0.addingTimeInterval(cadence + 2))
        #expect(pausedFolder.exitCode == .success, "\(pausedFolder.error?.message ?? "")")
        #expect(pausedFolder.result.counts["paused_folders"] == 1 && pausedFolder.result.counts["folders_checked"] == 0)
        #expect(pausedFolder.result.counts["triggered"] == 0)
        #expect(relay.triggers.count == 2)
        try a.setFolder("vault", paused: false)

        // Still behind once both are unpaused on A: the cadence has elapsed, so it triggers again.
        try a.wait(timeout: 60, "A to reconnect to B") { try a.isConnected(to: b.deviceID) }
        try a.wait(timeout: 30, "the need to show again") { (try a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int ?? 0) > 0 }
        #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(cadence + 3)).result.counts["triggered"] == 1)
        #expect(relay.triggers.count == 3)

        // B resumes and catches up: back in sync, the helper stops sending.
        try b.setFolder("vault", paused: false)
        try a.wait(timeout: 60, "B to catch up") {
            let completion = try a.completion(of: b.deviceID, folder: "vault")
            return FileManager.default.fileExists(atPath: folderB + "/new.md") && completion["needItems"] as? Int == 0 && completion["needBytes"] as? Int == 0
        }
        let caughtUp = try h.pass("retrigger-stale", now: t0.addingTimeInterval(3 * cadence))
        #expect(caughtUp.result.counts["peers_behind"] == 0 && caughtUp.result.counts["triggered"] == 0)
        #expect(relay.triggers.count == 3)

        // The pin is real: A's config.xml beside another certificate (B's) fails TLS, exit 69.
        let elsewhere = directory.file("copy")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: a.configPath, toPath: elsewhere + "/config.xml")
        try FileManager.default.copyItem(atPath: b.home + "/https-cert.pem", toPath: elsewhere + "/https-cert.pem")
        let pinned = try HelperHarness(environment: ["HOME": directory.path, "SYNCTHING_CONFIG": elsewhere + "/config.xml", "RELAY_URL": relay.url])
        let mismatch = try pinned.pass("retrigger-stale", now: t0)
        #expect(mismatch.exitCode == .unavailable && mismatch.error?.category == "syncthing-tls", "\(mismatch.error?.message ?? "ok")")

        for secret in [a.deviceID, b.deviceID, a.apiKey, relay.url, directory.path] {
            #expect(!h.everything.contains(secret) && !pinned.everything.contains(secret))
        }
    }
    /// An `https://` GUI whose config.xml has no `https-cert.pem` beside it: the one line names the missing file,
    /// not a certificate that "does not match the pinned" one (through the built `job`).
    @Test func anHTTPSGUIWithoutItsCertificateFileIsReportedAsAMissingFileNotAMismatchedPin() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let directory = TemporaryDirectory("stnocert")
        let a = try SyncthingInstance(home: directory.file("a"), tls: true)
        try a.configure(peers: [], folders: [])
        try a.start()
        defer { a.stop() }
        let elsewhere = directory.file("copy")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: a.configPath, toPath: elsewhere + "/config.xml")
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: ["SYNCTHING_CONFIG": elsewhere + "/config.xml", "RELAY_URL": relay.url])

        let missing = try m.run(["retrigger-stale"])
        #expect(missing.exitCode == 69, "\(missing.stderr)")
        let lines = missing.stderr.split(separator: "\n").filter { $0.hasPrefix("job: ") }
        #expect(lines.count == 1 && lines[0].contains("https-cert.pem is missing") && !lines[0].contains("does not match"), "\(missing.stderr)")
        let doctor = try m.run(["doctor"])
        #expect(doctor.stdout.contains("https-cert.pem is missing") && !doctor.stdout.contains("does not match"), "\(doctor.stdout)")

        // The file beside config.xml again: the same configuration is pinned and passes.
        try FileManager.default.copyItem(atPath: a.home + "/https-cert.pem", toPath: elsewhere + "/https-cert.pem")
        let pinned = try m.run(["retrigger-stale"])
        #expect(pinned.exitCode == 0, "\(pinned.stderr)")
    }
}
