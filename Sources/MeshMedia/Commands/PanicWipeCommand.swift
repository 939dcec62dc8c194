import Runner
import Store

/// `job mesh panic-wipe`: clears the node's keys, the identity cache and its pins, Noise sessions, pending sends
/// with their consents, heard and queued frames, reassembly buffers, and the delivered media — then reports
/// what it cleared. Build records and the alias policy are release data, not identity, and stay.
struct MeshPanicWipeCommand: Command {
    let path = ["mesh", "panic-wipe"]
    let summary = "erase keys, pins, sessions, pending consents and incoming media, and report what was cleared"

    func run(_ context: JobContext) throws {
        let db = context.database
        var counts = Counts()
        try db.write { db in
            counts["keys"] = try db.execute("DELETE FROM mesh_node", []) * 2
            counts["pins"] = try db.execute("DELETE FROM mesh_pins", [])
            counts["peers"] = try db.execute("DELETE FROM mesh_peers", [])
            counts["sessions"] = try db.execute("DELETE FROM mesh_sessions", [])
            counts["pending_consents"] = try db.scalar("SELECT count(*) FROM mesh_sends WHERE consent = 1") ?? 0
            counts["pending_sends"] = try db.execute("DELETE FROM mesh_sends WHERE status IN ('queued', 'waiting')", [])
            _ = try db.execute("UPDATE mesh_sends SET consent = 0, sealed = NULL", [])
            counts["deliveries"] = try db.execute("DELETE FROM mesh_deliveries", [])
            counts["frames"] = try db.execute("DELETE FROM mesh_inbox", []) + (try db.execute("DELETE FROM mesh_outbox", []))
            counts["fragments"] = try db.execute("DELETE FROM mesh_fragments", [])
            _ = try db.execute("DELETE FROM mesh_seen", [])
        }
        counts["media_files"] = MediaInbox.wipe(folder: MediaInbox.folder(forStore: context.storePath))
        context.logger.info("mesh_panic_wipe", ["pins": .int(counts["pins"]), "sessions": .int(counts["sessions"]),
                                                 "media_files": .int(counts["media_files"])])
        if context.jsonOutput {
            context.printJSON(["cleared": counts.json])
        } else {
            context.print("cleared: " + counts.entries.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
    }
}
