import Cryptography
import Runner
import Store

/// `job mesh show [--json]`: this node's own peer id, fingerprint, signing key, nickname and emulation — what a
/// peer sees of it and what to compare when pairing.
struct MeshShowCommand: Command {
    let path = ["mesh", "show"]
    let summary = "show this node's own peer id, fingerprint (SHA-256 of its Noise key), signing key and nickname"

    func run(_ context: JobContext) throws {
        let identity = try NodeIdentity.require(database: context.database, keyring: try context.keyring())
        let peerID = Hex.encode(identity.peerID)
        let fingerprint = Hex.encode(NodeIdentity.fingerprint(noiseKey: identity.noise.publicKey))
        if context.jsonOutput {
            context.printJSON(["peer_id": .string(peerID), "fingerprint": .string(fingerprint),
                               "signing_key": .string(Hex.encode(identity.signing.publicKey)),
                               "nickname": .string(identity.nickname), "emulate": .string(identity.emulation.rawValue)])
        } else {
            context.print("peer id \(peerID)")
            context.print("fingerprint \(fingerprint)")
            context.print("nickname \(TerminalText.escaped(identity.nickname))")
        }
    }
}

/// One send named on the command line, with its status.
struct SendRow {
    var id: Int64
    var status: String
    var hasContent: Bool
    var consent: Bool

    static func load(_ context: JobContext) throws -> SendRow {
        let text = context.arguments.positional(0)!
        guard let id = Int64(text), id > 0 else { throw JobError.usage("a send is named by its number (job mesh sends)") }
        guard let row = try context.database.queryOne("SELECT status, sealed IS NOT NULL, consent FROM mesh_sends WHERE id = ?", [id]) else {
            throw JobError.badInput("send-unknown", "no send has that number (job mesh sends)")
        }
        return SendRow(id: id, status: try row.get(0, as: String.self), hasContent: try row.get(1, as: Bool.self), consent: try row.get(2, as: Bool.self))
    }

    var isOpen: Bool { status == "queued" || status == "waiting" }
}

/// `job mesh sends cancel N`: a send not yet handed to the radio is cancelled (failed, reason `cancelled`); its
/// sealed content and any consent are erased. A failed send's kept content is erased too.
struct MeshSendsCancelCommand: Command {
    let path = ["mesh", "sends", "cancel"]
    let summary = "cancel a queued or waiting send (or drop a failed send's kept content); its content and consent are erased"
    let positionals = [PositionalSpec("N", "the send's number (job mesh sends)")]

    func run(_ context: JobContext) throws {
        let send = try SendRow.load(context)
        guard send.isOpen || send.status == "failed" else {
            throw JobError.badInput("send-not-cancellable", "the send was already handed to the radio; it can no longer be cancelled")
        }
        try SecureDelete.enable(context.database)
        let now = context.nowMilliseconds
        try context.database.write { db in
            _ = try db.execute("""
                UPDATE mesh_sends SET status = 'failed', reason = ?, consent = 0, sealed = NULL, updated_at = ? WHERE id = ?
                """, [SendReason.cancelled.rawValue, now, send.id])
        }
        if context.jsonOutput { context.printJSON(["send": .int(send.id), "status": "failed", "reason": .string(SendReason.cancelled.rawValue)]) }
        else { context.print("send \(send.id) cancelled") }
    }
}

/// `job mesh sends retry N [--accept-unencrypted]`: a failed send whose content is still kept is queued again. A
/// consent is never carried over: it is given again with this retry, or not at all.
struct MeshSendsRetryCommand: Command {
    let path = ["mesh", "sends", "retry"]
    let summary = "queue a failed send again (consent only if given again with --accept-unencrypted)"
    let options: [OptionSpec] = [
        .flag("--accept-unencrypted", "for this retry only: allow the signed but unencrypted legacy form if the peer cannot receive encrypted media"),
    ]
    let positionals = [PositionalSpec("N", "the send's number (job mesh sends)")]

    func run(_ context: JobContext) throws {
        let send = try SendRow.load(context)
        guard send.status == "failed" else { throw JobError.badInput("send-not-failed", "only a failed send can be retried") }
        guard send.hasContent else {
            throw JobError.badInput("send-content-gone", "this send's content is no longer kept (it was cancelled or sent); send the file again")
        }
        let consent = context.arguments.flag("--accept-unencrypted")
        if consent && !context.jsonOutput { context.print(MeshSendFileCommand.warning) }
        let now = context.nowMilliseconds
        try context.database.write { db in
            _ = try db.execute("""
                UPDATE mesh_sends SET status = 'queued', reason = NULL, form = NULL, fragments = NULL, consent = ?, waiting_at = NULL,
                       proof_token = NULL, proof_stalled_passes = 0, updated_at = ? WHERE id = ?
                """, [consent, now, send.id])
        }
        if context.jsonOutput { context.printJSON(["send": .int(send.id), "status": "queued", "consent": .bool(consent)]) }
        else { context.print("send \(send.id) queued again\(consent ? " with consent for an unencrypted fallback (this send only)" : "")") }
    }
}

/// `job mesh sends withdraw-consent N`: the `--accept-unencrypted` consent of a send not yet planned is withdrawn;
/// the send then goes encrypted or fails, never unencrypted.
struct MeshSendsWithdrawConsentCommand: Command {
    let path = ["mesh", "sends", "withdraw-consent"]
    let summary = "withdraw a queued or waiting send's consent to the unencrypted form before it is used"
    let positionals = [PositionalSpec("N", "the send's number (job mesh sends)")]

    func run(_ context: JobContext) throws {
        let send = try SendRow.load(context)
        guard send.isOpen else {
            throw JobError.badInput("consent-used", "the send is no longer queued or waiting: its consent was used or cleared")
        }
        let now = context.nowMilliseconds
        try context.database.write { db in
            _ = try db.execute("UPDATE mesh_sends SET consent = 0, updated_at = ? WHERE id = ? AND status IN ('queued', 'waiting')", [now, send.id])
        }
        if context.jsonOutput { context.printJSON(["send": .int(send.id), "consent": .bool(false)]) }
        else { context.print("send \(send.id): consent withdrawn\(send.consent ? "" : " (none was given)")") }
    }
}
