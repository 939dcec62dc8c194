import Cryptography
import Runner
import Store

/// Keeps the mesh tables bounded and their times sane whatever is heard; run by every `media-inbox` and
/// `media-outbox` pass and by `maintain-store`, inside the caller's write transaction.
///
/// - Stored times ahead of the clock (left by a pass run with a later `--now`) are brought back to it, as
///   `send-wakeups` and `retrigger-stale` do: heard-packet hashes, fragment sets, outbox frames (keeping each frame's
///   lifetime, so a plaintext legacy frame still expires 30 s after the repair), sessions, peers, quarantined frames
///   and sends. Nothing then outlives its retention because a pass once ran in the future.
/// - Half-open sessions (a handshake that never completed, and no established session beside it) are deleted
///   `halfOpenLifetimeMilliseconds` after their last step: a spoofed opener leaves no row behind.
/// - Peers known only from announces (no signing key bound in a session, no pin, no established session, no send
///   queued to them) are forgotten `unauthenticatedPeerLifetimeMilliseconds` after their last announce: throwaway
///   identities do not stay. A live peer announces every few minutes and is kept.
struct MeshUpkeep {
    let database: Database
    let keyring: StoreKeyring
    let now: Int64

    static let halfOpenLifetimeMilliseconds: Int64 = 600_000
    static let unauthenticatedPeerLifetimeMilliseconds: Int64 = 86_400_000
    /// Peer rows examined per run (each is opened to read its standing).
    static let peerBatch = 1000

    /// Runs every step; the counts name what changed (fixed words, nothing identifying).
    func run() throws -> Counts {
        var counts = Counts()
        let repaired = try repairFutureTimes()
        if repaired > 0 { counts["future_times_repaired"] = repaired }
        let halfOpen = try database.execute("DELETE FROM mesh_sessions WHERE state = 'handshaking' AND updated_at < ?",
                                            [now - Self.halfOpenLifetimeMilliseconds])
        if halfOpen > 0 { counts["half_open_sessions_pruned"] = halfOpen }
        let peers = try pruneUnauthenticatedPeers()
        if peers > 0 { counts["unauthenticated_peers_pruned"] = peers }
        return counts
    }

    /// Brings every stored time ahead of `now` back to `now`; returns the rows changed.
    func repairFutureTimes() throws -> Int {
        var changed = 0
        changed += try database.execute("UPDATE mesh_seen SET seen_at = ? WHERE seen_at > ?", [now, now])
        changed += try database.execute("UPDATE mesh_fragment_sets SET first_at = ? WHERE first_at > ?", [now, now])
        // A frame keeps its lifetime: its expiry moves back by as much as its creation time.
        changed += try database.execute("""
            UPDATE mesh_outbox SET expires_at = expires_at - (created_at - ?), created_at = ? WHERE created_at > ?
            """, [now, now, now])
        changed += try database.execute("UPDATE mesh_sessions SET started_at = min(started_at, ?), updated_at = ? WHERE updated_at > ? OR started_at > ?",
                                        [now, now, now, now])
        changed += try database.execute("UPDATE mesh_peers SET updated_at = ? WHERE updated_at > ?", [now, now])
        changed += try database.execute("UPDATE mesh_inbox_quarantine SET quarantined_at = ? WHERE quarantined_at > ?", [now, now])
        changed += try database.execute("""
            UPDATE mesh_sends SET updated_at = min(updated_at, ?), waiting_at = CASE WHEN waiting_at > ? THEN ? ELSE waiting_at END
            WHERE updated_at > ? OR waiting_at > ?
            """, [now, now, now, now, now])
        return changed
    }

    /// Deletes peers known only from announces that have not announced for a day; returns how many.
    func pruneUnauthenticatedPeers() throws -> Int {
        let registry = PeerRegistry(database: database, keyring: keyring)
        let stale = try database.query("""
            SELECT p.peer_index, p.sealed FROM mesh_peers AS p WHERE p.updated_at < ?
              AND NOT EXISTS (SELECT 1 FROM mesh_sessions AS s WHERE s.peer_index = p.peer_index AND s.state = 'established')
              AND NOT EXISTS (SELECT 1 FROM mesh_sends AS m WHERE m.peer_index = p.peer_index AND m.status IN ('queued', 'waiting'))
            ORDER BY p.updated_at LIMIT ?
            """, [now - Self.unauthenticatedPeerLifetimeMilliseconds, Self.peerBatch])
        var pruned = 0
        for row in stale {
            let index = try row.get(0, as: [UInt8].self)
            let record = try PeerRecord(serialized: try keyring.open(try row.get(1, as: [UInt8].self), purpose: PeerRegistry.recordPurpose).copyBytes())
            guard record.standing != .authenticated, try !registry.isPinned(fingerprint: record.fingerprint) else { continue }
            pruned += try database.execute("DELETE FROM mesh_peers WHERE peer_index = ?", [index])
        }
        return pruned
    }
}

extension MeshUpkeep {
    /// `maintain-store`'s share: this upkeep, and the retention every pass applies (expired outbox frames, old
    /// packet hashes, quarantined frames, expired fragment sets, received files and finished sends past
    /// `MeshRetention`), so a node whose passes stopped is pruned too.
    static let storeUpkeep = StoreUpkeep(name: "mesh") { context in
        let db = context.database
        guard try db.queryOne("SELECT 1 FROM mesh_node") != nil else { return Counts() }
        let retention = try MeshRetention(context.settings)
        let keyring = try context.keyring()
        let now = context.nowMilliseconds
        try SecureDelete.enable(db)
        var counts = try db.write { db -> Counts in
            var counts = try MeshUpkeep(database: db, keyring: keyring, now: now).run()
            var frames = 0
            while true {
                let deleted = try OutboxRetention.pruneExpired(db, now: now)
                frames += deleted
                if deleted < 1000 { break }
            }
            if frames > 0 { counts["mesh_frames_expired"] = frames }
            let seen = try db.execute("DELETE FROM mesh_seen WHERE seen_at < ?", [now - MediaInboxJob.seenRetentionMilliseconds])
            if seen > 0 { counts["mesh_hashes_pruned"] = seen }
            try InboxQuarantine(database: db, now: now).prune()
            let fragments = try Reassembly(database: db).expire(now: now)
            if fragments > 0 { counts["fragments_expired"] = fragments }
            return counts
        }
        for (key, value) in try retention.apply(context, now: now).entries { counts[key] = value }
        return counts
    }
}
