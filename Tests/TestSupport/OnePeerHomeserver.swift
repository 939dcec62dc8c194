import Foundation

/// One real Syncthing with a peer that is behind: a folder with a file, shared with a peer that never connects (so
/// Syncthing reports it needs the whole folder); config.xml found through `STHOMEDIR`, key and URL auto-detected.
/// The homeserver helper's tests and the relay's end-to-end tests of the helper share it.
package final class OnePeerHomeserver {
    package let directory = TemporaryDirectory("st1")
    package let syncthing: SyncthingInstance
    /// A real device ID (Syncthing checks the check digits) of a peer that is never started.
    package let peerID: String

    package init() throws {
        syncthing = try SyncthingInstance(home: directory.file("home"))
        peerID = try SyncthingInstance(home: directory.file("absent-peer")).deviceID
        let folder = directory.file("vault")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "note".write(toFile: folder + "/note.md", atomically: true, encoding: .utf8)
        try syncthing.configure(peers: [.init(deviceID: peerID, listenPort: unusedPort())], folders: [.init(id: "vault-1", path: folder, devices: [peerID])])
        try syncthing.start()
        try syncthing.wait(timeout: 30, "the peer to need the folder") {
            (try syncthing.completion(of: peerID, folder: "vault-1")["needItems"] as? Int ?? 0) > 0
        }
    }

    /// The helper's environment: this home, its Syncthing, and `relay` as `RELAY_URL`, plus `extra`.
    package func environment(relay: String, _ extra: [String: String] = [:]) -> [String: String] {
        var env = ["HOME": directory.path, "STHOMEDIR": syncthing.home, "RELAY_URL": relay]
        for (key, value) in extra { env[key] = value }
        return env
    }
}
