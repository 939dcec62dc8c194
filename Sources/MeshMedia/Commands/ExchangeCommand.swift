import Foundation
import Runner
import Store

/// `job --store A mesh exchange --to B`: the emulated radio link. Carries every frame in A's outbox that has not
/// yet reached B's node into B's inbox, in the order A sent them, and marks them carried to B.
///
/// A frame on the air reaches every neighbour, so "carried" is recorded per neighbour (B's peer id): the same
/// frame can be carried to several stores, and a relay node forwards what it hears through its own outbox
/// (TTL − 1), which a further `exchange` from the relay carries on — that is the multi-hop case. B's inbox is
/// written before A marks the frames carried; a run killed in between carries them again, and B's duplicate
/// detection (a TTL-independent packet hash) drops the second copy. The other store is opened, never created.
/// A private-file send all of whose frames have been carried to some neighbour turns from `transmitted` to
/// `carried` in `job mesh sends`.
///
/// A frame that carries a file in the clear is deleted (securely) from A's outbox in the transaction that records
/// its carry to its next hop, and expired frames are neither carried nor kept (`OutboxRetention`).
struct MeshExchangeCommand: Command {
    let path = ["mesh", "exchange"]
    let summary = "carry this node's outgoing frames to another node's store (the emulated BLE link)"
    let options: [OptionSpec] = [
        .required("--to", "STORE", "the neighbour's store file (it must have a mesh node)"),
        .value("--limit", "N", "carry at most N frames (default 100000)"),
    ]
    let discussion = """
        The emulated radio link: frames this node put on the air reach the other store's inbox, in order, once per
        neighbour. Run it in both directions for a two-way link; for A - R - C run A→R and R→C (R relays what is
        not addressed to it during its media-inbox pass), and the reverse. The other store is never created.
        """
    static let batchSize = 1000

    func run(_ context: JobContext) throws {
        let target = try context.arguments.required("--to")
        let limit = try context.arguments.integer("--limit", in: 1...Int.max, default: 100_000, needs: "a positive whole number")
        let source = context.database
        guard try source.queryOne("SELECT 1 FROM mesh_node") != nil else {
            throw JobError.configuration("no-node", "this store has no mesh node; run job mesh init first")
        }
        let sourcePath = URL(fileURLWithPath: context.storePath).standardizedFileURL.path
        guard URL(fileURLWithPath: target).standardizedFileURL.path != sourcePath else {
            throw JobError.usage("--to must name another node's store, not this one")
        }
        var options = Database.Options()
        options.create = false
        let neighbour: Database
        do { neighbour = try Database(path: target, options: options) } catch {
            throw JobError.badInput("neighbour-unavailable", "cannot open the store given with --to; check the path (it must be an existing node's store)")
        }
        let neighbourID: [UInt8]
        do {
            guard let id: [UInt8] = try neighbour.scalar("SELECT peer_id FROM mesh_node WHERE id = 1") else { throw JobError.internal("no node") }
            neighbourID = id
        } catch {
            throw JobError.badInput("neighbour-no-node", "the store given with --to has no mesh node; run job mesh init on it first")
        }

        let now = context.nowMilliseconds
        try SecureDelete.enable(source)
        while try source.write({ try OutboxRetention.pruneExpired($0, now: now) }) >= 1000 { try context.checkCancellation() }

        var carried = 0, handedOver = 0, sendsCarried = 0
        var after: Int64 = 0
        while carried < limit {
            try context.checkCancellation()
            let rows = try source.query("""
                SELECT o.id, o.frame, o.handover_to FROM mesh_outbox o
                WHERE o.id > ? AND (o.expires_at IS NULL OR o.expires_at > ?)
                  AND NOT EXISTS (SELECT 1 FROM mesh_carried c WHERE c.frame_id = o.id AND c.neighbour = ?)
                ORDER BY o.id LIMIT ?
                """, [after, now, neighbourID, min(Self.batchSize, limit - carried)])
            guard let last = rows.last else { break }
            after = try last.get(0, as: Int64.self)
            try neighbour.write { db in
                for row in rows { _ = try db.execute("INSERT INTO mesh_inbox (frame, received_at) VALUES (?, ?)", [try row.get(1, as: [UInt8].self), now]) }
            }
            try source.write { db in
                var handOver: [Int64] = []
                for row in rows {
                    let id = try row.get(0, as: Int64.self)
                    _ = try db.execute("INSERT OR IGNORE INTO mesh_carried (frame_id, neighbour, carried_at) VALUES (?, ?, ?)",
                                       [id, neighbourID, now])
                    if let next = try row.get(2, as: [UInt8]?.self), next == neighbourID { handOver.append(id) }
                }
                // Sends are judged before handed-over frames are erased: a frame handed to its next hop counts as carried.
                sendsCarried += try Self.markCarriedSends(db, now: now)
                for id in handOver { handedOver += try db.execute("DELETE FROM mesh_outbox WHERE id = ?", [id]) }
            }
            carried += rows.count
        }
        if context.jsonOutput {
            context.printJSON(["carried": .number(carried), "handed_over": .number(handedOver), "sends_carried": .number(sendsCarried)])
        } else {
            context.print("carried \(carried) frame(s)" + (sendsCarried > 0 ? ", completing \(sendsCarried) send(s)" : "")
                          + (handedOver > 0 ? "; \(handedOver) carrying a file in the clear handed over and erased" : ""))
        }
    }

    /// A transmitted send whose every frame has now reached at least one neighbour becomes `carried` — all this
    /// node can know: the mesh gives no delivery receipt, and a neighbour may be a relay or may drop the frame.
    static func markCarriedSends(_ db: Database, now: Int64) throws -> Int {
        try db.execute("""
            UPDATE mesh_sends SET status = 'carried', updated_at = ?
            WHERE status = 'transmitted'
              AND EXISTS (SELECT 1 FROM mesh_outbox o WHERE o.send_id = mesh_sends.id)
              AND NOT EXISTS (SELECT 1 FROM mesh_outbox o WHERE o.send_id = mesh_sends.id
                              AND NOT EXISTS (SELECT 1 FROM mesh_carried c WHERE c.frame_id = o.id))
            """, [now])
    }
}
