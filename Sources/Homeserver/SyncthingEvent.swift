import Foundation

/// One event from Syncthing's `/rest/events`, reduced to what the watcher decides on.
///
/// `id` is the event's number in the subscription (it starts again at 1 when Syncthing restarts). Only the two
/// change signals keep their data; every other type is `.other` and never wakes the relay.
struct SyncthingEvent: Equatable {
    enum Kind: Equatable {
        /// The local index of `folder` changed (a file here was added, changed or removed); `sequence` is the
        /// folder's local index sequence after the change.
        case localIndexUpdated(folder: String, sequence: Int64?)
        /// Syncthing's view of how much `device` still needs of `folder`.
        case folderCompletion(device: String, folder: String, sequence: Int64?, needItems: Int64, needBytes: Int64, needDeletes: Int64)
        case other
    }

    var id: Int64
    var kind: Kind

    /// The event types the watcher subscribes to (Syncthing filters the stream by them).
    static let subscribedTypes = ["LocalIndexUpdated", "FolderCompletion"]

    /// The answer of `/rest/events` (a JSON array) decoded, pure (fuzzed through `HomeserverFuzzing`); nil when it is
    /// not an array of events with numeric ids.
    static func decode(_ body: Any?) -> [SyncthingEvent]? {
        guard let list = body as? [Any] else { return nil }
        var events: [SyncthingEvent] = []
        events.reserveCapacity(list.count)
        for item in list {
            guard let object = item as? [String: Any], let id = integer(object["id"]) else { return nil }
            let type = object["type"] as? String
            let data = object["data"] as? [String: Any] ?? [:]
            switch type {
            case "LocalIndexUpdated":
                guard let folder = data["folder"] as? String else { return nil }
                events.append(SyncthingEvent(id: id, kind: .localIndexUpdated(folder: folder, sequence: integer(data["sequence"]))))
            case "FolderCompletion":
                guard let folder = data["folder"] as? String, let device = data["device"] as? String else { return nil }
                events.append(SyncthingEvent(id: id, kind: .folderCompletion(
                    device: device, folder: folder, sequence: integer(data["sequence"]),
                    needItems: integer(data["needItems"]) ?? 0, needBytes: integer(data["needBytes"]) ?? 0,
                    needDeletes: integer(data["needDeletes"]) ?? 0)))
            default:
                events.append(SyncthingEvent(id: id, kind: .other))
            }
        }
        return events
    }

    /// A JSON number that is a whole number in Int64's range, else nil.
    private static func integer(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double.isFinite, double == double.rounded(), abs(double) < 9.2e18 else { return nil }
        return number.int64Value
    }
}
