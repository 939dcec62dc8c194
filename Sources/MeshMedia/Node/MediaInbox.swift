import Cryptography
import Foundation
import Runner
import Store

/// Where delivered files land: `<store>.media/<media id>`, never under the sender's file name.
///
/// The media id is stable: hex SHA-256 over a label, the sender's peer id and the canonical file TLV, so the
/// same file from the same sender is delivered once whichever wire form carried it and however often a frame
/// is replayed. The folder is 0700 and each file 0600. The sender, file name, MIME type and declared size are kept
/// beside it, sealed (`ReceivedFileMeta`), for `job mesh files`; the file is new until exported.
struct MediaInbox {
    let database: Database
    let keyring: StoreKeyring
    let folder: String

    enum Form: String { case encrypted, alias, legacy }

    static func folder(forStore storePath: String) -> String { storePath + ".media" }

    static func mediaID(senderID: [UInt8], file: FilePacket) throws -> String {
        Hex.encode(SHA256.hash(Array("bitchat-private-media-v1".utf8) + senderID + (try file.encoded())))
    }

    /// Records and writes the file; false when this media id was delivered before. Runs inside the caller's
    /// transaction: the content is on disk (written, fsynced, linked, folder fsynced) before the row can commit,
    /// and if writing the file fails the row rolls back with it.
    func deliver(_ file: FilePacket, from senderID: [UInt8], form: Form, now: Int64) throws -> Bool {
        let mediaID = try Self.mediaID(senderID: senderID, file: file)
        let meta = try keyring.seal(ReceivedFileMeta(senderID: senderID, file: file).serialized(), purpose: ReceivedFileMeta.purpose(mediaID: mediaID))
        let inserted = try database.execute("""
            INSERT OR IGNORE INTO mesh_deliveries (media_id, form, sender_index, bytes, delivered_at, sealed_meta) VALUES (?, ?, ?, ?, ?, ?)
            """, [mediaID, form.rawValue, keyring.blindIndex(senderID, purpose: PeerRegistry.indexPurpose), file.content.count, now, meta])
        guard inserted > 0 else { return false }
        try write(file.content, name: mediaID)
        return true
    }

    /// Writes the content durably (`DurableFile`) inside the caller's transaction, so the file is on disk before
    /// the row naming it commits.
    private func write(_ content: [UInt8], name: String) throws {
        let manager = FileManager.default
        do {
            if !manager.fileExists(atPath: folder) {
                try manager.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            try DurableFile.write(content, folder: folder, name: name)
        } catch {
            throw JobError.transient("media-write", "cannot write a delivered file to the media folder beside the store; check its permissions and free space")
        }
    }

    /// Removes every delivered file; returns how many were removed.
    static func wipe(folder: String) -> Int {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: folder) else { return 0 }
        var removed = 0
        for name in names {
            if (try? manager.removeItem(atPath: folder + "/" + name)) != nil, !name.hasPrefix(".") { removed += 1 }
        }
        return removed
    }
}
