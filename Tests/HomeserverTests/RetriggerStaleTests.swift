import Foundation
import Runner
import Testing
import TestSupport
@testable import Homeserver

/// `retrigger-stale` against one real Syncthing (a folder with a file, shared with a peer that never
/// connects, so Syncthing reports it needs the whole folder) and the scripted relay stand-in.
@Suite(.serialized, .tags(.process, .postgres, .syncthing), .timeLimit(.minutes(15))) struct RetriggerStaleTests {
    let t0 = Fixture.t0

    typealias Homeserver = OnePeerHomeserver

    /// The clock went back a day after a sent wake-up. The stored send time (in the future) is
    /// treated as now and stored as now, logged once; wake-ups resume one cadence later, not a day later.
    @Test func aSendTimeStoredInTheFutureIsTreatedAsNow() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["STALE_RETRIGGER_SECONDS": "600"]))
        let start = Int64(t0.timeIntervalSince1970)
        func pass(at seconds: Int64) throws -> (report: [String: Any], stderr: String) {
            let result = try m.run(["--json", "retrigger-stale"], at: seconds)
            return (try result.jsonObject(), result.stderr)
        }
        let ahead = try pass(at: start + 86_400)
        #expect((ahead.report["counts"] as? [String: Int])?["triggered"] == 1, "\(ahead)")

        // The clock is set back a day: one cadence of rest from now, the repair logged once.
        let back = try pass(at: start)
        #expect(back.report["outcome"] as? String == "skipped" && back.report["reason"] as? String == "cadence")
        #expect(back.stderr.components(separatedBy: "clock.stored_time_in_future").count == 2, "\(back.stderr)")
        #expect(try m.database().scalar("SELECT last_sent_at FROM relay_helper_state") == start * 1000)
        let early = try pass(at: start + 599)
        #expect(early.report["reason"] as? String == "cadence" && !early.stderr.contains("clock.stored_time_in_future"))

        let resumed = try pass(at: start + 600)
        #expect((resumed.report["counts"] as? [String: Int])?["triggered"] == 1, "\(resumed)")
        #expect(relay.triggers.count == 2)
        for output in [back.stderr, resumed.stderr] { #expect(!output.contains(home.syncthing.deviceID)) }
    }

    @Test func eachRelayAnswerIsHandledAsTheSeedSays() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }

        // 202: sent, with exactly {"device_id": myID} as JSON; the cadence then holds further passes back.
        var h = try HelperHarness(environment: home.environment(relay: relay.url))
        let sent = try h.pass("retrigger-stale", now: t0)
        #expect(sent.exitCode == .success, "\(sent.error?.message ?? "")")
        #expect(sent.result.counts["peers_behind"] == 1 && sent.result.counts["triggered"] == 1)
        let request = try #require(relay.triggers.last)
        #expect(request["method"] as? String == "POST" && request["content_type"] as? String == "application/json")
        #expect((request["body"] as? [String: Any])?.keys.sorted() == ["device_id"])
        #expect((request["body"] as? [String: Any])?["device_id"] as? String == home.syncthing.deviceID)
        let early = try h.pass("retrigger-stale", now: t0.addingTimeInterval(21_599))
        #expect(early.result.outcome == .skipped && early.result.reason == "cadence")
        #expect(relay.triggers.count == 1)
        #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(21_600)).result.counts["triggered"] == 1)
        #expect(relay.triggers.count == 2)
        // The privacy rule: no Device ID, key, URL or path in any output or log line.
        for secret in [home.syncthing.deviceID, home.peerID, home.syncthing.apiKey, relay.url, "127.0.0.1", home.directory.path, "vault-1"] {
            #expect(!h.everything.contains(secret), "\(secret)")
        }

        // 400–403: subscription inactive — exit 0, recorded, re-checked only after the slow cadence.
        for status in [400, 401, 402, 403] {
            try relay.script(trigger: [.init(status: status)])
            h = try HelperHarness(environment: home.environment(relay: relay.url))
            let before = relay.triggers.count
            let inactive = try h.pass("retrigger-stale", now: t0)
            #expect(inactive.exitCode == .success && inactive.result.counts["subscription_inactive"] == 1, "\(status)")
            #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(3600)).result.reason == "subscription-inactive")
            #expect(relay.triggers.count == before + 1)
        }
        try relay.script(trigger: [.init(status: 202)])
        #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(21_600)).result.counts["triggered"] == 1)

        // 404: configuration error, exit 78.
        try relay.script(trigger: [.init(status: 404)])
        h = try HelperHarness(environment: home.environment(relay: relay.url))
        let missing = try h.pass("retrigger-stale", now: t0)
        #expect(missing.exitCode == .configuration && missing.error?.category == "relay-not-found")

        // 429 with Retry-After in seconds, then as an HTTP-date: later passes wait exactly that long.
        try relay.script(trigger: [.init(status: 429, headers: ["Retry-After": "120"])])
        h = try HelperHarness(environment: home.environment(relay: relay.url))
        #expect(try h.pass("retrigger-stale", now: t0).result.counts["rate_limited"] == 1)
        var count = relay.triggers.count
        #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(119)).result.reason == "backoff")
        #expect(relay.triggers.count == count)
        let t1 = t0.addingTimeInterval(120)
        let date = httpDate(t1.addingTimeInterval(600))
        try relay.script(trigger: [.init(status: 429, headers: ["Retry-After": date])])
        #expect(try h.pass("retrigger-stale", now: t1).result.counts["rate_limited"] == 1)
        count = relay.triggers.count
        #expect(try h.pass("retrigger-stale", now: t1.addingTimeInterval(599)).result.reason == "backoff")
        try relay.script(trigger: [.init(status: 202)])
        #expect(try h.pass("retrigger-stale", now: t1.addingTimeInterval(600)).result.counts["triggered"] == 1)
        #expect(relay.triggers.count == count + 1)

        // 503: three tries in the pass, then exit 75 with the back-off stored; a 503 then 202 recovers in-pass.
        try relay.script(trigger: [.init(status: 503)])
        h = try HelperHarness(environment: home.environment(relay: relay.url))
        count = relay.triggers.count
        let unavailable = try h.pass("retrigger-stale", now: t0)
        #expect(unavailable.exitCode == .temporaryFailure && relay.triggers.count == count + 3)
        #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(59)).result.reason == "backoff")
        try relay.script(trigger: [.init(status: 503), .init(status: 202)])
        let recovered = try h.pass("retrigger-stale", now: t0.addingTimeInterval(60))
        #expect(recovered.exitCode == .success && recovered.result.counts["tries"] == 2 && recovered.result.counts["triggered"] == 1)

        // Connection refused: the same as a 5xx.
        h = try HelperHarness(environment: home.environment(relay: "http://127.0.0.1:\(unusedPort())"))
        let refused = try h.pass("retrigger-stale", now: t0)
        #expect(refused.exitCode == .temporaryFailure && refused.result.outcome == .failed)
        #expect(try h.pass("retrigger-stale", now: t0.addingTimeInterval(30)).result.reason == "backoff")

        // 0 disables; a dry run checks but sends nothing.
        h = try HelperHarness(environment: home.environment(relay: relay.url, ["STALE_RETRIGGER_SECONDS": "0"]))
        #expect(try h.pass("retrigger-stale", now: t0).result.reason == "disabled")
        h = try HelperHarness(environment: home.environment(relay: relay.url))
        count = relay.triggers.count
        #expect(try h.pass("retrigger-stale", ["--dry-run"], now: t0).result.counts["would_trigger"] == 1)
        #expect(relay.triggers.count == count)
        // WATCHED_FOLDERS without the behind folder: nothing to do.
        h = try HelperHarness(environment: home.environment(relay: relay.url, ["WATCHED_FOLDERS": "other-folder"]))
        #expect(try h.pass("retrigger-stale", now: t0).result.counts["triggered"] == 0)
        #expect(relay.triggers.count == count)
    }

    @Test func badSyncthingConfigurationFailsClearly() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let cases: [([String: String], ExitCode, String)] = [
            (home.environment(relay: relay.url, ["SYNCTHING_API_KEY": "wrong-key"]), .configuration, "syncthing-key-refused"),
            (home.environment(relay: relay.url, ["SYNCTHING_API_URL": "http://127.0.0.1:\(unusedPort())"]), .unavailable, "syncthing-unreachable"),
            (home.environment(relay: relay.url, ["SYNCTHING_CONFIG": home.directory.file("nowhere/config.xml")]), .configuration, "syncthing-config"),
            (["HOME": home.directory.path, "STHOMEDIR": home.syncthing.home], .configuration, "relay-url"),
            (home.environment(relay: "relay.example"), .configuration, "relay-url"),
            (home.environment(relay: relay.url, ["STALE_RETRIGGER_SECONDS": "6h"]), .configuration, "stale-retrigger-seconds"),
            (["HOME": home.directory.file("empty"), "RELAY_URL": relay.url], .configuration, "syncthing-api-key"),
        ]
        for (environment, code, category) in cases {
            let h = try HelperHarness(environment: environment)
            let report = try h.pass("retrigger-stale", now: t0)
            #expect(report.exitCode == code && report.error?.category == category, "\(category): \(report.error?.message ?? "ok")")
            #expect(!h.everything.contains("wrong-key") && !h.everything.contains(home.syncthing.apiKey))
            #expect(try h.database().scalar("SELECT count(*) FROM relay_helper_state") == 0)
        }
        #expect(relay.triggers.isEmpty)

        // Overrides alone work without any config.xml.
        let h = try HelperHarness(environment: ["HOME": home.directory.file("empty"), "RELAY_URL": relay.url,
                                           "SYNCTHING_API_KEY": home.syncthing.apiKey, "SYNCTHING_API_URL": home.syncthing.guiURL])
        #expect(try h.pass("retrigger-stale", now: t0).result.counts["triggered"] == 1)
    }

    @Test func doctorReportsEachFailedCheckWithoutIdentifiers() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn(healthStatus: 200, healthBody: ["status": "degraded"])
        defer { relay.stop() }

        // The peer never connects and the relay is unhealthy: those two fail, exit 69; the rest pass.
        let h = try HelperHarness(environment: home.environment(relay: relay.url))
        let failed = #expect(throws: JobError.self) { try h.command(["doctor"], now: t0) }
        #expect(failed?.exitCode == .unavailable && failed?.message == "2 of 18 checks failed", "\(failed?.message ?? "")")  // 18: the store's 5 and the helper's 13
        let text = h.everything
        #expect(text.contains("FAIL  relay-health") && text.contains("FAIL  peer-connected") && text.contains("ok    folder-shared: 1 folder(s) shared"), "\(text)")
        #expect(text.contains("skip  trigger: not sent"))
        // Syncthing's own cert.pem and key.pem beside its config.xml are readable: triggers will be authenticated.
        #expect(text.contains("ok    device-key: triggers are authenticated (v2): cert.pem and key.pem are readable (ecdsa-p384-sha384)"), "\(text)")

        // A refused key: the key check fails (78) and the checks that need it are skipped.
        let wrongKey = try HelperHarness(environment: home.environment(relay: relay.url, ["SYNCTHING_API_KEY": "wrong-key"]))
        let refused = #expect(throws: JobError.self) { try wrongKey.command(["doctor"], now: t0) }
        #expect(refused?.exitCode == .configuration)
        #expect(wrongKey.everything.contains("FAIL  syncthing-key") && wrongKey.everything.contains("skip  device-id") && wrongKey.everything.contains("skip  event-stream"))

        // A watcher setting out of range: its check fails with the variable named, exit 78.
        let badDebounce = try HelperHarness(environment: home.environment(relay: relay.url, ["DEBOUNCE_SECONDS": "0"]))
        let debounce = #expect(throws: JobError.self) { try badDebounce.command(["doctor"], now: t0) }
        #expect(debounce?.exitCode == .configuration)
        #expect(badDebounce.everything.contains("FAIL  watcher-settings: DEBOUNCE_SECONDS must be"), "\(badDebounce.everything)")

        // A helper variable set but no RELAY_URL: a clear report, exit 78.
        let noRelay = try HelperHarness(environment: ["HOME": home.directory.file("empty"), "SYNCTHING_API_KEY": "wrong-key"])
        let unconfigured = #expect(throws: JobError.self) { try noRelay.command(["doctor"], now: t0) }
        #expect(unconfigured?.exitCode == .configuration)
        #expect(noRelay.everything.contains("FAIL  relay-url: RELAY_URL is not set"))

        // Nothing of the helper configured (a relay server, say): its group is skipped, not failed.
        let empty = try HelperHarness(environment: ["HOME": home.directory.file("empty")])
        _ = try empty.command(["doctor"], now: t0)
        #expect(empty.everything.contains("skip  retrigger-stale: not configured here: none of RELAY_URL or SYNCTHING_* is set"))

        #expect(relay.triggers.isEmpty)
        for secret in [home.syncthing.deviceID, home.peerID, home.syncthing.apiKey, relay.url, "127.0.0.1", home.directory.path, "vault-1", "wrong-key"] {
            #expect(!h.everything.contains(secret) && !wrongKey.everything.contains(secret) && !noRelay.everything.contains(secret), "\(secret)")
        }
    }
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
func httpDate(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.string(from: date)
}
