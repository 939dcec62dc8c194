import Cryptography
import Foundation
import Runner
import Store

/// `job mesh send-file --to PEER FILE [--accept-unencrypted]`: queues one private file for `media-outbox`.
///
/// `--accept-unencrypted` is consent for this one send only: the command prints the warning first, stores the
/// consent on this send's row, and `media-outbox` clears it when the send finishes. It is never remembered for
/// the peer. The file (at most 1 MiB) is sealed in the store until planned.
struct MeshSendFileCommand: Command {
    let path = ["mesh", "send-file"]
    let summary = "queue a private file for a peer (encrypted when it proves privateMedia; unencrypted only with --accept-unencrypted)"
    let options: [OptionSpec] = [
        .required("--to", "PEER", "the peer's id or fingerprint (job mesh peers)"),
        .value("--mime", "TYPE", "the MIME type sent with the file (default application/octet-stream)"),
        .value("--via", "PEER[,PEER…]", "source-route the file through these relays in order (v2 route; the fragment plan accounts for it)"),
        .flag("--accept-unencrypted", "for this send only: allow the signed but unencrypted legacy form if the peer cannot receive encrypted media"),
    ]
    let positionals = [PositionalSpec("FILE", "the file to send (at most 1 MiB)")]
    let discussion = """
        media-outbox decides the form when it plans the send: encrypted (Noise 0x20) once the peer proved privateMedia
        in the current session; the signed legacy fileTransfer only for an unpinned peer and only when this very send
        carried --accept-unencrypted (the consent is used by this send and never remembered); otherwise the send fails
        and `job mesh sends` says why. A plan above 256 BLE fragments fails without sending anything.
        """

    static let warning = "warning: if this peer cannot receive encrypted media, this file is sent NOT end-to-end encrypted: mesh relays can see its name and content (signed, so they cannot alter it). This consent applies to this send only."

    func run(_ context: JobContext) throws {
        let peerID = try PeerArgument.parse(try context.arguments.required("--to"))
        let path = context.arguments.positional(0)!
        let mime = context.arguments.value("--mime") ?? "application/octet-stream"
        guard !mime.isEmpty, mime.utf8.count <= 255 else { throw JobError.usage("--mime needs 1 to 255 bytes") }
        let consent = context.arguments.flag("--accept-unencrypted")
        let route = try context.arguments.value("--via").map { text in
            try text.split(separator: ",", omittingEmptySubsequences: false).map { try PeerArgument.parse(String($0), option: "--via") }
        } ?? []
        guard route.count <= QueuedFile.maxRouteHops else { throw JobError.usage("--via takes at most \(QueuedFile.maxRouteHops) relays") }

        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard let attributes, (attributes[.type] as? FileAttributeType) == .typeRegular, let size = attributes[.size] as? Int else {
            throw JobError.badInput("file-unreadable", "the file to send does not exist or is not a regular file")
        }
        guard size <= FilePacket.maxContentBytes else {
            throw JobError.badInput("file-too-large", "the file is larger than 1 MiB, the most either client accepts; nothing was queued")
        }
        guard size > 0 else { throw JobError.badInput("file-empty", "the file is empty; nothing was queued") }
        guard let data = FileManager.default.contents(atPath: path), data.count == size else {
            throw JobError.badInput("file-unreadable", "the file to send could not be read")
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        let queued = QueuedFile(peerID: peerID, fileName: name, mimeType: mime, content: [UInt8](data), route: route)

        // The warning comes before anything is stored.
        if consent && !context.jsonOutput { context.print(Self.warning) }
        let keyring = try context.keyring()
        _ = try NodeIdentity.require(database: context.database, keyring: keyring)
        let sealed = try keyring.seal(queued.serialized(), purpose: QueuedFile.purpose)
        let now = context.nowMilliseconds
        let id = try context.database.write { db -> Int64 in
            _ = try db.execute("""
                INSERT INTO mesh_sends (peer_index, sealed, consent, status, content_bytes, created_at, updated_at)
                VALUES (?, ?, ?, 'queued', ?, ?, ?)
                """, [keyring.blindIndex(peerID, purpose: PeerRegistry.indexPurpose), sealed, consent, size, now, now])
            return db.lastInsertRowID
        }
        if context.jsonOutput {
            var object: [(String, JSON)] = [("send", .int(id)), ("status", "queued"), ("consent", .bool(consent))]
            if consent { object.append(("warning", .string(Self.warning))) }
            context.printJSON(.object(object))
        } else {
            context.print("send \(id) queued\(consent ? " with consent for an unencrypted fallback (this send only)" : "")")
        }
    }
}

/// `job mesh sends [--json]`: every send with its status, form, fragment count and, for failures, the reason.
///
/// Statuses claim no more than is known (`SendStatus`): there is no `delivered`, as the mesh gives no receipt.
struct MeshSendsCommand: Command {
    let path = ["mesh", "sends"]
    let summary = "list private-file sends: status (queued, waiting, transmitted, carried, failed), form, fragments, and why a send failed"

    func run(_ context: JobContext) throws {
        var rows: [JSON] = []
        var lines: [String] = []
        try context.database.forEachRow("""
            SELECT id, status, form, reason, fragments, content_bytes, consent, created_at, updated_at FROM mesh_sends ORDER BY id
            """) { row in
            let id = try row.get(0, as: Int64.self)
            let status = try row.get(1, as: String.self)
            let form = try row.get(2, as: String?.self)
            let reason = try row.get(3, as: String?.self)
            let fragments = try row.get(4, as: Int?.self)
            let explanation = reason.flatMap { SendReason(rawValue: $0)?.explanation } ?? SendStatus(rawValue: status)?.explanation
            rows.append(["send": .int(id), "status": .string(status), "form": .optional(form), "reason": .optional(reason),
                         "explanation": .optional(explanation), "fragments": .optional(fragments),
                         "bytes": .int(try row.get(5, as: Int64.self)), "consent_pending": .bool(try row.get(6, as: Bool.self)),
                         "created_at": .int(try row.get(7, as: Int64.self)), "updated_at": .int(try row.get(8, as: Int64.self))])
            var line = "send \(id): \(status)"
            if let form { line += " \(form)" }
            if let fragments { line += ", \(fragments) fragment(s)" }
            if let reason { line += " — \(reason): \(explanation ?? "")" } else if let explanation { line += " — \(explanation)" }
            lines.append(line)
        }
        if context.jsonOutput { context.printJSON(.array(rows)) } else if lines.isEmpty { context.print("no sends") } else { lines.forEach(context.print) }
    }
}
