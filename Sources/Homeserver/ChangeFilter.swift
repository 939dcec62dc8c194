import Runner

/// Which Syncthing events are changes a phone should be woken for, pure over the events and a snapshot of
/// Syncthing's configuration.
///
/// A `LocalIndexUpdated` of a watched, unpaused folder is a change, once per local index sequence. A
/// `FolderCompletion` is one only while that unpaused remote device still needs items, bytes or deletes of a
/// watched, unpaused folder, and once per (device, folder) state. Every other event is ignored.
struct ChangeFilter {
    /// What Syncthing's configuration says about pausing, read from `/rest/config/*`.
    struct Snapshot: Equatable {
        var pausedFolders: Set<String> = []
        var pausedDevices: Set<String> = []
    }

    /// What the filter made of one event.
    enum Verdict: String, LogWord, CaseIterable {
        case change, duplicate, unwatched, paused, inSync = "in_sync", ignored
    }

    let watched: Set<String>?
    /// This Syncthing's own Device ID (its completion is never a remote peer's need).
    let myID: String
    private var lastLocalSequence: [String: Int64] = [:]
    private var lastCompletion: [String: [Int64]] = [:]

    init(watched: Set<String>?, myID: String) {
        self.watched = watched
        self.myID = myID
    }

    /// True when `event` could be a change at all (a watched folder's change signal): the caller refreshes the
    /// snapshot before judging such events.
    func mayBeChange(_ event: SyncthingEvent) -> Bool {
        switch event.kind {
        case .localIndexUpdated(let folder, _): return isWatched(folder)
        case .folderCompletion(let device, let folder, _, _, _, _): return device != myID && isWatched(folder)
        case .other: return false
        }
    }

    /// Judges `event` against `snapshot`, remembering what it has seen.
    mutating func judge(_ event: SyncthingEvent, snapshot: Snapshot) -> Verdict {
        switch event.kind {
        case .other:
            return .ignored
        case .localIndexUpdated(let folder, let sequence):
            guard isWatched(folder) else { return .unwatched }
            guard !snapshot.pausedFolders.contains(folder) else { return .paused }
            if let sequence {
                if let last = lastLocalSequence[folder], sequence <= last { return .duplicate }
                lastLocalSequence[folder] = sequence
            }
            return .change
        case .folderCompletion(let device, let folder, let sequence, let needItems, let needBytes, let needDeletes):
            guard device != myID else { return .ignored }
            guard isWatched(folder) else { return .unwatched }
            guard !snapshot.pausedFolders.contains(folder), !snapshot.pausedDevices.contains(device) else { return .paused }
            let key = device + "\u{0}" + folder
            let state = [sequence ?? -1, needItems, needBytes, needDeletes]
            let repeated = lastCompletion[key] == state
            lastCompletion[key] = state
            guard needItems > 0 || needBytes > 0 || needDeletes > 0 else { return .inSync }
            return repeated ? .duplicate : .change
        }
    }

    private func isWatched(_ folder: String) -> Bool { watched == nil || watched!.contains(folder) }
}
