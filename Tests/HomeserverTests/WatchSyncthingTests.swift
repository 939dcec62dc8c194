import Foundation
import Runner
import Store
import Testing
import TestSupport
@testable import Homeserver

/// `job watch-syncthing` against a real Syncthing (GUI on HTTPS, so every call goes through the pinned
/// `https-cert.pem`) and the relay stand-in that records every trigger with its arrival time. Changes are made by
/// writing files and asking Syncthing to rescan (the fixture's folders have no file-system watcher).
@Suite(.serialized) struct WatchSyncthingTests {
    /// One Syncthing with three folders shared with a peer that never connects: `vault` and `quiet` are watched,
    /// `other` is not.
    final class Homeserver {
        let directory = TemporaryDirectory("watch")
        let syncthing: SyncthingInstance
        let peerID: String

        init() throws {
            syncthing = try SyncthingInstance(home: directory.file("home"), tls: true)
            peerID = try SyncthingInstance(home: directory.file("absent-peer")).deviceID
            var folders: [SyncthingInstance.Folder] = []
            for id in ["vault", "other", "quiet"] {
                let path = directory.file(id)
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                folders.append(.init(id: id, path: path, devices: [peerID]))
            }
            try syncthing.configure(peers: [.init(deviceID: peerID, listenPort: unusedPort())], folders: folders)
            try syncthing.start()
        }

        func environment(relay: String, _ extra: [String: String] = [:]) -> [String: String] {
            var env = ["STHOMEDIR": syncthing.home, "RELAY_URL": relay, "WATCHED_FOLDERS": "vault,quiet", "DEBOUNCE_SECONDS": "1",
                       "STARTUP_ANNOUNCE": "0"]
            for (key, value) in extra { env[key] = value }
            return env
        }

        /// Writes `count` new files into `folder` and has Syncthing rescan it.
        func change(_ folder: String, count: Int = 1) throws {
            for _ in 0..<count {
                try "note \(UUID().uuidString)".write(toFile: directory.file(folder) + "/\(UUID().uuidString).md", atomically: true, encoding: .utf8)
            }
            try syncthing.rescan(folder)
        }
    }

    /// Starts the watcher and waits until it is subscribed (its `watch.subscribed` log line).
    static func startWatcher(_ m: RelayMachine) throws -> JobProcess.Running {
        let running = try m.start(["watch-syncthing"])
        try waitFor(20, "the watcher to subscribe: \(running.stderrSoFar)") { running.stderrSoFar.contains("watch.subscribed") || !running.process.isRunning }
        guard running.process.isRunning else { throw TestFailure("the watcher exited: \(running.stderrSoFar)") }
        return running
    }

    static func waitFor(_ seconds: TimeInterval, _ what: @autoclosure () -> String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? condition()) == true { return }
            usleep(50_000)
        }
        throw TestFailure("timed out after \(seconds) s waiting for \(what())")
    }

    static func arrivals(_ relay: RelayStandIn) -> [Double] { relay.triggers.compactMap { $0["at"] as? Double } }

    @Test func oneChangeWakesTheRelayOnceABurstOnceAndUnwatchedOrPausedFoldersNever() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try RelayMachine(environment: home.environment(relay: relay.url))
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        #expect(relay.triggers.isEmpty, "STARTUP_ANNOUNCE=0 sends nothing at start")

        // One file: exactly one trigger, within DEBOUNCE_SECONDS + 1 s of the change being indexed, carrying only the Device ID.
        try home.change("vault")
        try Self.waitFor(5, "the first trigger") { relay.triggers.count == 1 }
        let request = try #require(relay.triggers.first)
        #expect((request["body"] as? [String: Any])?.keys.sorted() == ["device_id"])
        #expect((request["body"] as? [String: Any])?["device_id"] as? String == home.syncthing.deviceID)
        sleep(3)
        #expect(relay.triggers.count == 1, "one change, one trigger")

        // 200 files written over 3 s, rescanned as they come: one trigger after the last.
        let burstStart = Date().timeIntervalSince1970
        for _ in 0..<12 {
            try home.change("vault", count: 17)
            usleep(250_000)
        }
        try Self.waitFor(6, "the burst's trigger") { relay.triggers.count == 2 }
        sleep(3)
        #expect(relay.triggers.count == 2, "a burst, one trigger")
        #expect((Self.arrivals(relay).last ?? 0) > burstStart + 3, "the trigger follows the burst's last change (trailing edge)")

        // A folder outside WATCHED_FOLDERS, and a watched folder once paused: no trigger.
        try home.change("other")
        try home.syncthing.setFolder("quiet", paused: true)
        try "x".write(toFile: home.directory.file("quiet") + "/paused.md", atomically: true, encoding: .utf8)
        try? home.syncthing.rescan("quiet")
        sleep(4)
        #expect(relay.triggers.count == 2, "unwatched or paused folders never trigger")

        watcher.signal(SIGTERM)
        let result = try watcher.wait(timeout: 10)
        #expect(result.exitCode == 0, "\(result.stderr)")
        for secret in [home.syncthing.deviceID, home.peerID, home.syncthing.apiKey, relay.url, "127.0.0.1", home.directory.path, "vault", "quiet"] {
            #expect(!result.stderr.contains(secret), "a log line carries \(secret)")
        }
    }

    @Test func aSyncthingRestartMidWatchIsDetectedAndTheNextChangeStillTriggers() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try RelayMachine(environment: home.environment(relay: relay.url))
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        // Several changes first, so the event counter is well past what a new Syncthing process starts at.
        for _ in 0..<3 {
            try home.change("vault")
            try Self.waitFor(6, "a trigger") { relay.triggers.count >= 1 }
            sleep(2)
        }
        let before = relay.triggers.count
        home.syncthing.stop()
        try home.syncthing.start()
        try Self.waitFor(40, "the restart to be detected: \(watcher.stderrSoFar)") { watcher.stderrSoFar.contains("syncthing.restarted") }
        sleep(1)
        try home.change("vault")
        try Self.waitFor(8, "the first change after the restart to trigger") { relay.triggers.count == before + 1 }
        watcher.signal(SIGTERM)
        #expect(try watcher.wait(timeout: 10).exitCode == 0)
    }

    @Test func sigtermDuringTheDebounceSendsThePendingTriggerThenExitsZero() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try RelayMachine(environment: home.environment(relay: relay.url, ["DEBOUNCE_SECONDS": "60"]))
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        try home.change("vault")
        // The change is seen: the watcher holds a wake-up back (stored for the sweep).
        try Self.waitFor(10, "the wake-up to be pending") {
            let pending: Int64? = try m.database().scalar("SELECT watcher_pending_since FROM relay_helper_state WHERE id = 1")
            return pending != nil
        }
        #expect(relay.triggers.isEmpty)
        let stopAt = Date()
        watcher.signal(SIGTERM)
        let result = try watcher.wait(timeout: 10)
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(relay.triggers.count == 1, "the pending trigger is sent before exit")
        #expect(Date().timeIntervalSince(stopAt) < 5)
        let pending: Int64? = try m.database().scalar("SELECT watcher_pending_since FROM relay_helper_state WHERE id = 1")
        #expect(pending == nil, "a stopped watcher holds nothing back")
    }

    @Test func relay404EndsTheWatcherWith78AndOneClearLine() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn(trigger: [.init(status: 404)])
        defer { relay.stop() }
        let m = try RelayMachine(environment: home.environment(relay: relay.url, ["STARTUP_ANNOUNCE": "yes"]))
        let result = try m.start(["watch-syncthing"]).wait(timeout: 30)
        #expect(result.exitCode == 78, "\(result.stderr)")
        let failures = result.stderr.split(separator: "\n").filter { $0.hasPrefix("job: ") }
        #expect(failures.count == 1 && failures[0].contains("404") && failures[0].contains("RELAY_URL"), "\(result.stderr)")
        #expect(relay.triggers.count == 1)

        // A health check answering 404 stops it before anything is sent.
        try relay.script(trigger: [.init(status: 202)], healthStatus: 404)
        let health = try m.start(["watch-syncthing"]).wait(timeout: 30)
        #expect(health.exitCode == 78 && health.stderr.contains("/api/v1/health"), "\(health.stderr)")
        #expect(relay.triggers.count == 1)
    }

    @Test func relayAnswers402KeepRunning429WaitsRetryAfterAnd503RetriesWithGrowingJitteredPauses() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        // The startup announce meets 429 (Retry-After: 7), then three 503s, then 202.
        let relay = try RelayStandIn(trigger: [.init(status: 429, headers: ["Retry-After": "7"]), .init(status: 503), .init(status: 503),
                                               .init(status: 503), .init(status: 202)])
        defer { relay.stop() }
        let m = try RelayMachine(environment: home.environment(relay: relay.url, ["STARTUP_ANNOUNCE": "on"]))
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        try Self.waitFor(40, "five triggers: \(watcher.stderrSoFar)") { relay.triggers.count == 5 }
        let at = Self.arrivals(relay)
        let gaps = zip(at.dropFirst(), at).map { $0 - $1 }
        #expect(gaps[0] >= 6.9 && gaps[0] < 9, "429 Retry-After: 7 waits 7 s: \(gaps)")
        // 503: pauses of 1, 2 and 4 s, each times a jitter in 0.5…1.5.
        for (index, base) in [1.0, 2.0, 4.0].enumerated() {
            #expect(gaps[index + 1] >= base * 0.5 - 0.05 && gaps[index + 1] <= base * 1.5 + 1, "503 pause \(index + 1): \(gaps)")
        }
        // The stand-in sees the request before the watcher has stored the answer: wait for the store to say so.
        try Self.waitFor(10, "the accepted trigger recorded as sent") {
            try m.database().scalar("SELECT last_answer FROM relay_helper_state WHERE id = 1") as String? == "sent"
        }

        // 402: the watcher keeps running (the re-check is a minute later) and the state says why.
        try relay.script(trigger: [.init(status: 402)])
        try home.change("vault")
        try Self.waitFor(6, "the 402") { relay.triggers.count == 6 }
        sleep(2)
        #expect(watcher.process.isRunning, "a subscription state never stops the watcher")
        #expect(relay.triggers.count == 6, "the re-check waits a minute")
        let inactive: String? = try m.database().scalar("SELECT last_answer FROM relay_helper_state WHERE id = 1")
        #expect(inactive == "subscription-inactive")
        watcher.signal(SIGTERM)
        #expect(try watcher.wait(timeout: 10).exitCode == 0)
    }

    @Test func theStaleSweepSkipsWhileTheWatcherHoldsOrJustSentAWakeUpAndRunsWhenItIsDown() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        // `vault` has a file the absent peer needs, so the sweep always finds a peer behind.
        try home.change("vault")
        try home.syncthing.wait(timeout: 30, "the peer to need the folder") {
            (try home.syncthing.completion(of: home.peerID, folder: "vault")["needItems"] as? Int ?? 0) > 0
        }
        let m = try RelayMachine(environment: home.environment(relay: relay.url, ["DEBOUNCE_SECONDS": "60", "STALE_RETRIGGER_SECONDS": "3"]))
        func sweep() throws -> [String: Any] { try m.run(["--json", "retrigger-stale"]).jsonObject() }

        // The watcher holds a wake-up back (a 60 s debounce): the sweep skips.
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        try home.change("vault")
        try Self.waitFor(10, "the wake-up to be pending") {
            let pending: Int64? = try m.database().scalar("SELECT watcher_pending_since FROM relay_helper_state WHERE id = 1")
            return pending != nil
        }
        let held = try sweep()
        #expect(held["outcome"] as? String == "skipped" && held["reason"] as? String == "watcher-pending", "\(held)")
        #expect(relay.triggers.isEmpty)
        let running = try m.run(["--json", "homeserver", "status"]).jsonObject()
        #expect(running["watcher"] as? String == "running" && running["wake_up_pending_since"] is String, "\(running)")

        // SIGTERM sends it; the watcher's trigger counts as the last sent: the sweep skips for the cadence.
        watcher.signal(SIGTERM)
        #expect(try watcher.wait(timeout: 10).exitCode == 0)
        #expect(relay.triggers.count == 1)
        let justSent = try sweep()
        #expect(justSent["reason"] as? String == "cadence", "\(justSent)")
        let stopped = try m.run(["--json", "homeserver", "status"]).jsonObject()
        #expect(stopped["watcher"] as? String == "not running" && stopped["last_answer"] as? String == "sent" && stopped["last_sent_at"] is String, "\(stopped)")

        // The watcher is down and the cadence has passed: the sweep wakes the phone itself.
        sleep(3)
        let ran = try sweep()
        #expect((ran["counts"] as? [String: Int])?["triggered"] == 1, "\(ran)")
        #expect(relay.triggers.count == 2)
    }

    @Test func readyIsReportedToSystemdOnlyOnceSubscribed() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let socket = try NotifySocket(path: home.directory.file("notify.sock"))
        let m = try RelayMachine(environment: home.environment(relay: relay.url, ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"]))
        // Syncthing is down at start: the watcher retries for its Device ID and says nothing to systemd.
        home.syncthing.stop()
        let watcher = try m.start(["watch-syncthing"])
        defer { watcher.signal(SIGKILL) }
        try Self.waitFor(10, "a retry") { watcher.stderrSoFar.contains("syncthing.not_ready") }
        #expect(!socket.received().contains("READY=1"))
        try home.syncthing.start()
        try Self.waitFor(20, "READY=1") { socket.received().contains("READY=1") }
        #expect(watcher.stderrSoFar.contains("watch.subscribed"))
        // Subscribed means no change is missed from then on; the watchdog is pinged.
        try home.change("vault")
        try Self.waitFor(6, "the trigger") { relay.triggers.count == 1 }
        try Self.waitFor(5, "a watchdog ping") { socket.received().contains("WATCHDOG=1") }
        watcher.signal(SIGTERM)
        #expect(try watcher.wait(timeout: 10).exitCode == 0)
        #expect(socket.received().contains("STOPPING=1"))
    }

    @Test func badWatcherSettingsExit78WithOneLineNamingTheVariable() throws {
        let directory = TemporaryDirectory("watch-config")
        let m = try RelayMachine(environment: ["RELAY_URL": "http://127.0.0.1:9", "SYNCTHING_API_KEY": "k", "SYNCTHING_API_URL": "http://127.0.0.1:9",
                                               "HOME": directory.path])
        for (key, value) in [("DEBOUNCE_SECONDS", "0.5"), ("DEBOUNCE_SECONDS", "soon"), ("STARTUP_ANNOUNCE", "maybe")] {
            m.extra[key] = value
            let result = try m.run(["watch-syncthing"], timeout: 20)
            #expect(result.exitCode == 78 && result.stderr.contains(key), "\(key)=\(value): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            m.extra[key] = nil
        }
    }
}

/// A unix datagram socket standing in for systemd's notification socket: collects what `sd_notify` sends.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw TestFailure("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw TestFailure("cannot bind the notify socket") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    private var messages: [String] = []

    /// Everything received so far, one datagram per entry.
    func received() -> [String] {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            messages.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
        return messages.flatMap { $0.split(separator: "\n").map(String.init) }
    }

    deinit { close(fd) }
}
