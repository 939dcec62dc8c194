import Cryptography
import Foundation
import Runner
import Store

/// `job mesh files list [--json]`: every received file with its id, name, MIME type, size, sender, form and whether
/// it is new (not yet exported).
struct MeshFilesListCommand: Command {
    let path = ["mesh", "files", "list"]
    let summary = "list received files: id, name, MIME type, size, sender, form (encrypted, alias, legacy) and whether it is new"

    func run(_ context: JobContext) throws {
        let files = ReceivedFiles(database: context.database, keyring: try context.keyring(),
                                  folder: MediaInbox.folder(forStore: context.storePath))
        let entries = try files.list()
        if context.jsonOutput {
            context.printJSON(.array(entries.map { entry in
                ["id": .string(entry.mediaID), "name": .optional(entry.meta?.fileName), "mime": .optional(entry.meta?.mimeType),
                 "bytes": .int(entry.bytes), "declared_size": .optional(entry.meta.map { Int64(clamping: $0.declaredSize) }),
                 "sender": .optional(entry.meta.map { Hex.encode($0.senderID) }), "form": .string(entry.form),
                 "delivered_at": .int(entry.deliveredAt), "new": .bool(entry.isNew)]
            }))
            return
        }
        guard !entries.isEmpty else { context.print("no received files"); return }
        for entry in entries {
            let name = entry.meta?.fileName.map(TerminalText.escaped) ?? "(no name)"
            let mime = entry.meta?.mimeType.map(TerminalText.escaped) ?? "(no type)"
            let sender = entry.meta.map { Hex.encode($0.senderID) } ?? "(unknown sender)"
            context.print("\(entry.mediaID.prefix(16)) \(name) (\(mime), \(entry.bytes) bytes) from \(sender), \(entry.form)\(entry.isNew ? ", new" : "")")
        }
    }
}

/// `job mesh files export ID --to PATH`: writes a received file's content to a new file (never over an existing
/// one) and marks it seen.
struct MeshFilesExportCommand: Command {
    let path = ["mesh", "files", "export"]
    let summary = "write a received file's content to a new file and mark it seen"
    let options: [OptionSpec] = [.required("--to", "PATH", "the file to create (refused if it exists)")]
    let positionals = [PositionalSpec("ID", "the file's id (job mesh files list) or a prefix of at least 8 hex digits")]

    func run(_ context: JobContext) throws {
        let target = try context.arguments.required("--to")
        let files = ReceivedFiles(database: context.database, keyring: try context.keyring(),
                                  folder: MediaInbox.folder(forStore: context.storePath))
        let entry = try files.resolve(context.arguments.positional(0)!)
        guard let content = FileManager.default.contents(atPath: files.contentPath(entry.mediaID)) else {
            throw JobError.badInput("file-missing", "the received file's content is missing from the media folder beside the store")
        }
        guard !FileManager.default.fileExists(atPath: target) else {
            throw JobError.badInput("file-exists", "the export target already exists; nothing was written")
        }
        guard FileManager.default.createFile(atPath: target, contents: content, attributes: [.posixPermissions: 0o600]) else {
            throw JobError.badInput("export-unwritable", "the export target could not be created")
        }
        try context.database.write { _ in try files.markSeen(entry.mediaID, now: context.nowMilliseconds) }
        if context.jsonOutput {
            context.printJSON(["exported": .string(entry.mediaID), "bytes": .int(Int64(content.count))])
        } else {
            context.print("exported \(content.count) bytes")
        }
    }
}

/// `job mesh files delete ID`: deletes a received file's content and its record (secure delete).
struct MeshFilesDeleteCommand: Command {
    let path = ["mesh", "files", "delete"]
    let summary = "delete a received file: its content and everything kept about it"
    let positionals = [PositionalSpec("ID", "the file's id (job mesh files list) or a prefix of at least 8 hex digits")]

    func run(_ context: JobContext) throws {
        let db = context.database
        let files = ReceivedFiles(database: db, keyring: try context.keyring(), folder: MediaInbox.folder(forStore: context.storePath))
        let entry = try files.resolve(context.arguments.positional(0)!)
        try SecureDelete.enable(db)
        try db.write { db in _ = try db.execute("DELETE FROM mesh_deliveries WHERE media_id = ?", [entry.mediaID]) }
        let path = files.contentPath(entry.mediaID)
        if FileManager.default.fileExists(atPath: path) {
            do { try FileManager.default.removeItem(atPath: path) } catch {
                throw JobError.transient("media-delete", "the record was deleted but the content could not be removed from the media folder; check its permissions")
            }
        }
        if context.jsonOutput { context.printJSON(["deleted": .string(entry.mediaID)]) } else { context.print("deleted") }
    }
}
