import Cryptography
import Foundation
import Runner
import Store

/// What is kept about a received file beside its content: the sender's peer id, the file name, the MIME type and
/// the declared size, sealed to the delivery's media id (a row moved to another media id does not open).
struct ReceivedFileMeta: Equatable {
    var senderID: [UInt8]
    var fileName: String?
    var mimeType: String?
    var declaredSize: UInt64

    static func purpose(mediaID: String) -> String { "mesh-received-file:" + mediaID }

    init(senderID: [UInt8], file: FilePacket) {
        self.senderID = senderID
        fileName = file.fileName
        mimeType = file.mimeType
        declaredSize = file.fileSize
    }

    func serialized() -> [UInt8] {
        var out = senderID
        for text in [fileName, mimeType] {
            guard let text else { out.append(0); continue }
            let bytes = Array(text.utf8)
            out.append(1); out.appendBigEndian(UInt32(bytes.count)); out += bytes
        }
        out.appendBigEndian(declaredSize)
        return out
    }

    private static func text(_ reader: inout ByteReader) throws -> String? {
        guard try reader.byte() == 1 else { return nil }
        return String(decoding: try reader.take(Int(try reader.uint32())), as: UTF8.self)
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        senderID = Array(try reader.take(8))
        fileName = try Self.text(&reader)
        mimeType = try Self.text(&reader)
        declaredSize = try reader.uint64()
    }
}

/// The received files of a node: `mesh_deliveries` rows with their sealed metadata, the content in the media folder.
/// A file is new (the notification) until it is exported.
struct ReceivedFiles {
    let database: Database
    let keyring: StoreKeyring
    let folder: String

    struct Entry {
        var mediaID: String
        var meta: ReceivedFileMeta?
        var form: String
        var bytes: Int64
        var deliveredAt: Int64
        var isNew: Bool
    }

    func list() throws -> [Entry] {
        try database.query("SELECT media_id, sealed_meta, form, bytes, delivered_at, seen_at FROM mesh_deliveries ORDER BY delivered_at, media_id")
            .map { row in
                let mediaID = try row.get(0, as: String.self)
                // Deliveries from before metadata was kept have none.
                let meta = try row.get(1, as: [UInt8]?.self).map { sealed in
                    try ReceivedFileMeta(serialized: try keyring.open(sealed, purpose: ReceivedFileMeta.purpose(mediaID: mediaID)).copyBytes())
                }
                return Entry(mediaID: mediaID, meta: meta, form: try row.get(2, as: String.self), bytes: try row.get(3, as: Int64.self),
                             deliveredAt: try row.get(4, as: Int64.self), isNew: try row.get(5, as: Int64?.self) == nil)
            }
    }

    /// The one received file whose media id starts with `prefix` (at least 8 hex digits, any case).
    func resolve(_ prefix: String) throws -> Entry {
        let wanted = prefix.lowercased()
        guard wanted.count >= 8, wanted.count <= 64, wanted.allSatisfy(\.isHexDigit) else {
            throw JobError.usage("a received file is named by its id (job mesh files list) or a prefix of at least 8 hex digits")
        }
        let matches = try list().filter { $0.mediaID.hasPrefix(wanted) }
        guard matches.count <= 1 else { throw JobError.badInput("file-ambiguous", "more than one received file has an id starting with that prefix; give more digits") }
        guard let entry = matches.first else { throw JobError.badInput("file-unknown", "no received file has that id (job mesh files list)") }
        return entry
    }

    func contentPath(_ mediaID: String) -> String { folder + "/" + mediaID }

    /// Marks the file seen (exported): it is no longer new.
    func markSeen(_ mediaID: String, now: Int64) throws {
        _ = try database.execute("UPDATE mesh_deliveries SET seen_at = ? WHERE media_id = ? AND seen_at IS NULL", [now, mediaID])
    }
}
