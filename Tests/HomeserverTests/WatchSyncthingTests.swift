import Foundation
import Runner
import Store
import Testing
import TestSupport
@testable import Homeserver

/// `job watch-syncthing` against a real Syncthing (GUI on HTTPS, so every call goes through the pinned
/// `https-cert.pem`) and the relay stand-in that records every trigger with its arrival time. Changes are made by
/// writing files and asking Syncthing to rescan (the fixture's folders have no file-system watcher).
@Suite(.serialized, .tags(.process, .postgres, .syncthing), .timeLimit(.minutes(15))) struct WatchSyncthingTests {
    typealias Homeserver = WatchedHomeserver

    /// Starts the watcher and waits until it is subscribed (its `watch.subscribed` log line).
    static func startWatcher(_ m: HelperMachine) throws -> JobProcess.Running { try WatchedHomeserver.subscribed(m.start(["watch-syncthing"])) }

    static func waitFor(_ seconds: TimeInterval, _ what: @autoclosure () -> String, _ condition: () throws -> Bool) throws {
        try WatchedHomeserver.waitFor(seconds, what(), condition)
    }

    static func arrivals(_ relay: RelayStandIn) -> [Double] { relay.triggers.compactMap { $0["at"] as? Double } }

    /// Debug logs: the watcher then logs `watch.events_handled` for every event batch it has judged.
    static let debugLogs = ["JOB_LOG_LEVEL": "debug"]

    /// The watcher's `watch.events_handled` lines so far (when run with `debugLogs`): one per event batch,
    /// its counts and whether a wake-up is held back once the batch is judged.
    static func batches(_ watcher: JobProcess.Running) -> [[String: String]] {
        watcher.stderrSoFar.split(separator: "\n").filter { $0.contains("event=watch.events_handled") }.map { line in
            Dictionary(line.split(separator: " ").compactMap { field -> (String, String)? in
                guard let equals = field.firstIndex(of: "=") else { return nil }
                return (String(field[..<equals]), String(field[field.index(after: equals)...]))
            }, uniquingKeysWith: { $1 })
        }
    }

    /// Changes the unwatched folder `other` as a marker and waits until the watcher has judged it; returns the
    /// batches after the first `after`. The rescan has finished when `change` returns and Syncthing's events are
    /// ordered, so by then the watcher has judged every event Syncthing reported before the marker.
    static func settled(_ watcher: JobProcess.Running, _ home: Homeserver, after: Int) throws -> [[String: String]] {
        try home.change("other")
        try waitFor(15, "the watcher to judge the unwatched folder's change: \(watcher.stderrSoFar)") {
            batches(watcher).dropFirst(after).contains { Int($0["filtered"] ?? "") ?? 0 > 0 }
        }
        return Array(batches(watcher).dropFirst(after))
    }

    @Test func oneChangeWakesTheRelayOnceABurstOnceAndUnwatchedOrPausedFoldersNever() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: home.environment(relay: relay.url, Self.debugLogs))
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        #expect(relay.triggers.isEmpty, "STARTUP_ANNOUNCE=0 sends nothing at start")

        // One file: exactly one trigger, within DEBOUNCE_SECONDS + 1 s of the change being indexed, carrying only the Device ID.
        try home.change("vault")
        try Self.waitFor(5, "the first trigger") { relay.triggers.count == 1 }
        let request = try #require(relay.triggers.first)
        #expect((request["body"] as? [String: Any])?.keys.sorted() == ["device_id"])
        #expect((request["body"] as? [String: Any])?["device_id"] as? String == home.syncthing.deviceID)
        // Once everything the change made Syncthing report is judged, nothing is held back: no second trigger.
        let afterFirst = try Self.settled(watcher, home, after: Self.batches(watcher).count)
        #expect(afterFirst.last?["pending"] == "false", "a wake-up is held back after the change's trigger: \(afterFirst)")
        usleep(500_000)
        #expect(relay.triggers.count == 1, "one change, one trigger")

        // 200 files written over 3 s, rescanned as they come: one trigger after the last.
        let burstStart = Date().timeIntervalSince1970
        for _ in 0..<12 {
            try home.change("vault", count: 17)
            usleep(250_000)
        }
        try Self.waitFor(6, "the burst's trigger") { relay.triggers.count == 2 }
        let afterBurst = try Self.settled(watcher, home, after: Self.batches(watcher).count)
        #expect(afterBurst.last?["pending"] == "false", "a wake-up is held back after the burst's trigger: \(afterBurst)")
        usleep(500_000)
        #expect(relay.triggers.count == 2, "a burst, one trigger")
        #expect((Self.arrivals(relay).last ?? 0) > burstStart + 3, "the trigger follows the burst's last change (trailing edge)")

        // A watched folder once paused, and a folder outside WATCHED_FOLDERS (the marker): judged, nothing held back, no trigger.
        let beforeQuiet = Self.batches(watcher).count
        try home.syncthing.setFolder("quiet", paused: true)
        try "x".write(toFile: home.directory.file("quiet") + "/paused.md", atomically: true, encoding: .utf8)
        try? home.syncthing.rescan("quiet")
        let quiet = try Self.settled(watcher, home, after: beforeQuiet)
        #expect(quiet.allSatisfy { $0["pending"] == "false" && $0["changes"] == "0" }, "an unwatched or paused folder's event held a wake-up back: \(quiet)")
        usleep(500_000)
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
        let m = try HelperMachine(environment: home.environment(relay: relay.url))
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        // Several changes first, so the event counter is well past what a new Syncthing process starts at.
        // Each change's own trigger is awaited before the next change, so none joins the last one's debounce.
        for sent in 1...3 {
            try home.change("vault")
            try Self.waitFor(6, "trigger \(sent)") { relay.triggers.count >= sent }
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

    /// A peer catching up but still behind wakes the phone through `FolderCompletion` alone: B pauses the shared
    /// folder, A gets two files while the watcher is down, the watcher starts (no announce), B resumes. A's own
    /// index does not change after the watcher subscribes (a `LocalIndexUpdated`-only subscription on A proves it):
    /// what A reports is B's progress (its index updates and download progress), with B still needing the large
    /// file, since A's send rate is capped.
    @Test func aPeerResumingBehindTriggersThroughFolderCompletionAloneWithoutALocalChange() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let directory = TemporaryDirectory("watch-pair")
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
        try a.start()
        try b.start()
        // Each side announces a file first: 1.19 tracks no need for a device whose index sequence is 0.
        try a.wait(timeout: 60, "the seed files to sync") {
            try a.isConnected(to: b.deviceID) && FileManager.default.fileExists(atPath: folderA + "/from-b.md")
                && FileManager.default.fileExists(atPath: folderB + "/from-a.md") && a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int == 0
        }
        // About 20 KiB/s from A, loopback included: B needs most of a minute for 1 MiB.
        let (optionsStatus, _) = try a.request("PATCH", "/rest/config/options", body: ["maxSendKbps": 20, "limitBandwidthInLan": true])
        #expect(optionsStatus == 200)

        // Syncthing computes completions only while someone polls /rest/events: this probe polls, and the change's
        // own FolderCompletion (B behind) is seen here, before the watcher subscribes.
        let completions = "/rest/events?events=FolderCompletion&since=0&timeout=0"
        _ = try a.request("GET", completions)
        try b.setFolder("vault", paused: true)
        sleep(1)
        // Two files: B takes the small one at once and then reports its own index, while the large one (16 blocks,
        // enough for Syncthing's download progress messages) keeps it behind.
        try "small".write(toFile: folderA + "/small.md", atomically: true, encoding: .utf8)
        try Data((0..<(2 << 20)).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: folderA + "/large.bin"))
        try a.rescan("vault")
        try a.wait(timeout: 30, "A to report that B needs the new file") {
            let events = try a.request("GET", completions).1 as? [[String: Any]] ?? []
            return events.contains { (($0["data"] as? [String: Any])?["needItems"] as? Int ?? 0) > 0 }
        }
        sleep(3)
        let localChanges = "/rest/events?events=LocalIndexUpdated&since=0&timeout=0"
        _ = try a.request("GET", localChanges)

        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: ["STHOMEDIR": a.home, "RELAY_URL": relay.url, "WATCHED_FOLDERS": "vault", "DEBOUNCE_SECONDS": "1",
                                               "STARTUP_ANNOUNCE": "0"])
        let watcher = try Self.startWatcher(m)
        defer { watcher.signal(SIGKILL) }
        sleep(3)
        #expect(relay.triggers.isEmpty, "nothing happened since the watcher subscribed")

        try b.setFolder("vault", paused: false)
        try Self.waitFor(30, "the FolderCompletion trigger: \(watcher.stderrSoFar); A's completions: \(String(describing: try? a.request("GET", completions).1))") {
            relay.triggers.count >= 1
        }
        #expect((relay.triggers.first?["body"] as? [String: Any])?["device_id"] as? String == a.deviceID)
        let (status, local) = try a.request("GET", localChanges)
        #expect(status == 200 && (local as? [Any])?.isEmpty == true, "A's own index changed after the watcher subscribed: \(String(describing: local))")
        #expect((try a.completion(of: b.deviceID, folder: "vault")["needItems"] as? Int ?? 0) >= 1, "B was still behind when the trigger came")

        watcher.signal(SIGTERM)
        let result = try watcher.wait(timeout: 10)
        #expect(result.exitCode == 0, "\(result.stderr)")
        for secret in [a.deviceID, b.deviceID, a.apiKey, relay.url, directory.path, "vault"] {
            #expect(!result.stderr.contains(secret), "a log line carries \(secret)")
        }
    }

    /// The same event seen twice: Syncthing keeps a subscription's events, so a watcher started again (SIGKILL, then
    /// a new process) is first handed the change the old one already woke the phone for. It is history: no second
    /// trigger, and the next change still triggers.
    @Test func aChangeSeenAgainByARestartedWatcherTriggersOnlyOnce() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: home.environment(relay: relay.url, Self.debugLogs))
        let first = try Self.startWatcher(m)
        defer { first.signal(SIGKILL) }
        try home.change("vault")
        try Self.waitFor(5, "the trigger") { relay.triggers.count == 1 }
        first.signal(SIGKILL)
        _ = try first.wait(timeout: 10)

        let second = try Self.startWatcher(m)
        defer { second.signal(SIGKILL) }
        // Everything Syncthing reported before the marker is judged: the old change was no change, nothing is held back.
        let judged = try Self.settled(second, home, after: 0)
        #expect(judged.allSatisfy { $0["pending"] == "false" && $0["changes"] == "0" }, "the change already handled was seen again: \(judged)")
        usleep(500_000)
        #expect(relay.triggers.count == 1, "the change already handled was seen again and sent again: \(second.stderrSoFar)")
        try home.change("vault")
        try Self.waitFor(5, "the next change's trigger") { relay.triggers.count == 2 }
        second.signal(SIGTERM)
        #expect(try second.wait(timeout: 10).exitCode == 0)
    }

    @Test func sigtermDuringTheDebounceSendsThePendingTriggerThenExitsZero() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["DEBOUNCE_SECONDS": "60"]))
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
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["STARTUP_ANNOUNCE": "yes"]))
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
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["STARTUP_ANNOUNCE": "on"]))
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
        // Its line says the watcher has decided to ask again later (a minute: WatcherRulesTests), not to retry soon.
        try Self.waitFor(10, "the 402 to be handled: \(watcher.stderrSoFar)") { watcher.stderrSoFar.contains("relay.subscription_inactive") }
        usleep(500_000)
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
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["DEBOUNCE_SECONDS": "60", "STALE_RETRIGGER_SECONDS": "3"]))
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
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "2000000"]))
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
        let m = try HelperMachine(environment: ["RELAY_URL": "http://127.0.0.1:9", "SYNCTHING_API_KEY": "k", "SYNCTHING_API_URL": "http://127.0.0.1:9",
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
