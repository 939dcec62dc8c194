import Store

/// How long a frame stays in `mesh_outbox` (the emulated radio) — and when a frame that carries a file in the clear
/// is handed over and erased.
///
/// Ordinary frames (announces, handshakes, Noise ciphertext) stay a day, carried once to each neighbour that comes
/// in range. A signed legacy `fileTransfer` (0x22), or a fragment of one, carries the file name and content in the
/// clear, so it is kept only as long as delivery needs:
/// - it is deleted as soon as it has been carried to its next hop — the next hop on its source route after this
///   node, else its recipient — in the same transaction that records the carry;
/// - uncarried, it expires after `legacyWindowMilliseconds`, the receivers' reassembly window (30 s): the only
///   retry the link makes is to carry again what an interrupted `mesh exchange` did not mark carried, and a receiver
///   or relay drops a partial fragment set after 30 s, so a later copy cannot complete a set that was cut off.
///   A node that is not in range within that window gets nothing; the sender queues the file again.
///
/// Deletions run with `PRAGMA secure_delete=ON` (`SecureDelete`).
enum OutboxRetention {
    static let frameRetentionMilliseconds: Int64 = 86_400_000
    static let legacyWindowMilliseconds: Int64 = Reassembly.lifetimeMilliseconds

    /// Where a frame goes and until when it is kept.
    struct Plan: Equatable {
        /// The neighbour whose carry hands the frame over (it is then deleted); nil for frames kept their whole life.
        var handoverTo: [UInt8]?
        var expiresAt: Int64
    }

    /// True for a packet that carries a file in the clear: a legacy `fileTransfer`, or a fragment of one.
    static func carriesPlaintextFile(_ packet: BitchatPacket) -> Bool {
        let fileTransfer = BitchatPacket.MessageType.fileTransfer.rawValue
        if packet.type == fileTransfer { return true }
        guard packet.messageType == .fragment, let fragment = try? Fragment.decode(packet.payload) else { return false }
        return fragment.originalType == fileTransfer
    }

    /// The hop after `me` for a directed packet: the next entry of its source route (the first when `me` is not on
    /// it, i.e. the sender), or the recipient once the route is done; nil for an undirected packet.
    static func nextHop(of packet: BitchatPacket, after me: [UInt8]) -> [UInt8]? {
        guard let recipient = packet.recipientID else { return nil }
        let route = packet.version >= 2 ? packet.route : []
        guard !route.isEmpty else { return recipient }
        if let position = route.firstIndex(of: me) {
            return position + 1 < route.count ? route[position + 1] : recipient
        }
        return route[0]
    }

    /// The retention of `packet` put on the air by `me` at `now`.
    static func plan(for packet: BitchatPacket, me: [UInt8], now: Int64) -> Plan {
        guard carriesPlaintextFile(packet) else { return Plan(handoverTo: nil, expiresAt: now + frameRetentionMilliseconds) }
        return Plan(handoverTo: nextHop(of: packet, after: me), expiresAt: now + legacyWindowMilliseconds)
    }

    /// Deletes expired frames (at most `batch` rows) inside the caller's write transaction; returns how many.
    /// Rows written before `meshmedia-011-outbox-handover` have no `expires_at` and keep the day rule.
    static func pruneExpired(_ db: Database, now: Int64, batch: Int = 1000) throws -> Int {
        try db.execute("""
            DELETE FROM mesh_outbox WHERE id IN (
                SELECT id FROM mesh_outbox WHERE expires_at <= ?
                UNION ALL
                SELECT id FROM mesh_outbox WHERE expires_at IS NULL AND created_at < ?
                LIMIT ?)
            """, [now, now - frameRetentionMilliseconds, batch])
    }
}
