import Foundation
import Runner
import Store

/// How long received files and the history of finished sends are kept, as settings; applied by every
/// `media-inbox` and `media-outbox` pass and by `maintain-store`, on the invocation's clock (`--now` when given).
///
/// - A received file (its `mesh_deliveries` row, its sealed metadata and its content in the media folder) goes
///   `mesh.received-files-retention-days` after it was delivered, whether or not it was exported; 0 keeps received
///   files until `mesh files delete` or `mesh panic-wipe`.
/// - A finished send (`transmitted`, `carried` or `failed`) goes `mesh.send-history-retention-days` after its last
///   change. Queued and waiting sends are never pruned. The shortest history is a day: a send's frames live that
///   long in the outbox, and `mesh exchange` marks the send carried through them.
///
/// Rows go inside the caller's write transaction (with `SecureDelete` on); the content files are removed after it
/// commits (`removeContent`), as `mesh files delete` does, so a failed transaction leaves every file in place.
struct MeshRetention {
    static let receivedFilesKey = "mesh.received-files-retention-days"
    static let sendHistoryKey = "mesh.send-history-retention-days"
    static let settings: [SettingSpec] = [
        .integer(receivedFilesKey, default: 90, in: 0...3650,
                 "days a received mesh file (content and record) is kept after delivery; 0 keeps it until deleted by hand"),
        .integer(sendHistoryKey, default: 30, in: 1...3650,
                 "days a finished mesh send (transmitted, carried or failed) stays in mesh sends after its last change"),
    ]
    /// Rows removed per table per run; a backlog goes over the next passes.
    static let batch = 1000

    /// Days; 0: never.
    let receivedFilesDays: Int
    let sendHistoryDays: Int

    /// The retention the store's settings give (a bad stored value is a configuration error, 78).
    init(_ settings: Settings) throws {
        receivedFilesDays = try settings.int(Self.receivedFilesKey)
        sendHistoryDays = try settings.int(Self.sendHistoryKey)
    }

    /// What one run removed: the media ids whose content is to be removed, and the finished sends deleted.
    struct Pruned {
        var mediaIDs: [String] = []
        var sends = 0
    }

    /// Deletes expired deliveries and finished sends at `now`, inside the caller's write transaction.
    func prune(_ db: Database, now: Int64) throws -> Pruned {
        var pruned = Pruned()
        if receivedFilesDays > 0 {
            let cutoff = now - Int64(receivedFilesDays) * 86_400_000
            pruned.mediaIDs = try db.query("""
                DELETE FROM mesh_deliveries WHERE media_id IN (
                    SELECT media_id FROM mesh_deliveries WHERE delivered_at < ? ORDER BY delivered_at LIMIT ?)
                RETURNING media_id
                """, [cutoff, Int64(Self.batch)]).map { try $0.get(0, as: String.self) }
        }
        let cutoff = now - Int64(sendHistoryDays) * 86_400_000
        pruned.sends = try db.execute("""
            DELETE FROM mesh_sends WHERE id IN (
                SELECT id FROM mesh_sends WHERE status IN ('transmitted', 'carried', 'failed') AND updated_at < ? ORDER BY id LIMIT ?)
            """, [cutoff, Int64(Self.batch)])
        return pruned
    }

    /// Removes the content of pruned deliveries from `folder` once their rows are gone; returns how many files were
    /// removed (a file already gone counts as removed).
    static func removeContent(_ mediaIDs: [String], folder: String) -> Int {
        var removed = 0
        for mediaID in mediaIDs {
            let path = folder + "/" + mediaID
            if !FileManager.default.fileExists(atPath: path) { removed += 1; continue }
            if (try? FileManager.default.removeItem(atPath: path)) != nil { removed += 1 }
        }
        return removed
    }

    /// Runs the retention in its own write transaction and removes the content; the counts name what went.
    func apply(_ context: JobContext, now: Int64) throws -> Counts {
        let pruned = try context.database.write { db in try prune(db, now: now) }
        var counts = Counts()
        if !pruned.mediaIDs.isEmpty {
            counts["received_files_expired"] = pruned.mediaIDs.count
            let removed = Self.removeContent(pruned.mediaIDs, folder: MediaInbox.folder(forStore: context.storePath))
            if removed < pruned.mediaIDs.count { counts["received_content_left"] = pruned.mediaIDs.count - removed }
        }
        if pruned.sends > 0 { counts["send_history_pruned"] = pruned.sends }
        return counts
    }
}
