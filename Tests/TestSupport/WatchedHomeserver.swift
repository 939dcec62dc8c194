import Foundation

/// One real Syncthing (GUI on HTTPS, so every call goes through the pinned `https-cert.pem`) with three folders
/// shared with a peer that never connects: `vault` and `quiet` are watched, `other` is not. The homeserver helper's
/// watcher tests and the relay's end-to-end tests of the watcher share it.
package final class WatchedHomeserver {
    package let directory = TemporaryDirectory("watch")
    package let syncthing: SyncthingInstance
    package let peerID: String

    package init() throws {
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

    /// The watcher's environment: this Syncthing, `relay`, the watched folders, a 1 s debounce, no announce; plus `extra`.
    package func environment(relay: String, _ extra: [String: String] = [:]) -> [String: String] {
        var env = ["STHOMEDIR": syncthing.home, "RELAY_URL": relay, "WATCHED_FOLDERS": "vault,quiet", "DEBOUNCE_SECONDS": "1",
                   "STARTUP_ANNOUNCE": "0"]
        for (key, value) in extra { env[key] = value }
        return env
    }

    /// Writes `count` new files into `folder` and has Syncthing rescan it.
    package func change(_ folder: String, count: Int = 1) throws {
        for _ in 0..<count {
            try "note \(UUID().uuidString)".write(toFile: directory.file(folder) + "/\(UUID().uuidString).md", atomically: true, encoding: .utf8)
        }
        try syncthing.rescan(folder)
    }

    /// Waits until `running` (a started `job watch-syncthing`) is subscribed: its `watch.subscribed` log line.
    package static func subscribed(_ running: JobProcess.Running) throws -> JobProcess.Running {
        try waitFor(20, "the watcher to subscribe: \(running.stderrSoFar)") { running.stderrSoFar.contains("watch.subscribed") || !running.process.isRunning }
        guard running.process.isRunning else { throw TestFailure("the watcher exited: \(running.stderrSoFar)") }
        return running
    }

    /// Polls `condition` every 50 ms until it holds, or throws after `seconds`.
    package static func waitFor(_ seconds: TimeInterval, _ what: @autoclosure () -> String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? condition()) == true { return }
            usleep(50_000)
        }
        throw TestFailure("timed out after \(seconds) s waiting for \(what())")
    }
}
