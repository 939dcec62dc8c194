import Store

/// Fragment reassembly in the store, with the receiver bounds of the iOS client: a set lives 30 s, holds at most
/// 1,179,760 bytes for fileTransfer/noiseEncrypted originals (1 MiB otherwise), declares at most `maxFragments`
/// fragments, and at most `maxSets` sets are in progress at once.
///
/// - A set's bookkeeping (total, original type, fragments held, bytes, first heard) is one `mesh_fragment_sets`
///   row, so adding a fragment is a constant number of primary-key look-ups, whatever the set's size; the set is
///   read whole once, when its last fragment arrives.
/// - A new set when `maxSets` are in progress evicts one (as iOS evicts the oldest), never refuses the newcomer:
///   a sender holding more than its fair share of the cap (the cap over the senders with sets in progress) loses
///   its own oldest set; otherwise the oldest set of the sender holding the most goes. Spoofed one-fragment sets
///   therefore never lock fragmented files out, and one sender flooding sets only displaces its own.
/// - The same index heard twice: the last copy wins (as iOS). A fragment naming another total or original type
///   than its set's first fragment is ignored, and the set in flight is kept (iOS keeps the first fragment's
///   metadata). Both are counted.
struct Reassembly {
    let database: Database

    static let lifetimeMilliseconds: Int64 = 30_000
    static let maxSets = 128
    static let largeBound = 1_179_760
    static let defaultBound = 1_048_576
    /// Clients cut 469-byte chunks (386 with an 8-hop route): the largest packet is then at most 3,057 fragments.
    /// Android caps a set at 256.
    static let maxFragments = 4_096

    enum Result: Equatable {
        /// Kept; `replaced` when it replaced an earlier copy of the same index, `evicted` when its new set evicted another.
        case stored(replaced: Bool, evicted: Bool)
        case complete([UInt8], evicted: Bool)
        /// Another total or original type than its set's: ignored, the set kept.
        case mismatched
        /// Refused, and its set (if any) dropped: too many fragments declared, or the set's byte bound crossed.
        case rejected
    }

    static func bound(forOriginalType type: UInt8) -> Int {
        type == BitchatPacket.MessageType.fileTransfer.rawValue || type == BitchatPacket.MessageType.noiseEncrypted.rawValue
            ? largeBound : defaultBound
    }

    /// Drops sets older than their lifetime; returns the fragments dropped. A set first heard after `now` (a pass
    /// run with a clock ahead) is taken as first heard at `now`, so it expires rather than outliving every set.
    func expire(now: Int64) throws -> Int {
        _ = try database.execute("UPDATE mesh_fragment_sets SET first_at = ? WHERE first_at > ?", [now, now])
        let cutoff = now - Self.lifetimeMilliseconds
        let dropped = try database.execute("""
            DELETE FROM mesh_fragments WHERE set_key IN (SELECT set_key FROM mesh_fragment_sets WHERE first_at < ?)
            """, [cutoff])
        _ = try database.execute("DELETE FROM mesh_fragment_sets WHERE first_at < ?", [cutoff])
        return dropped
    }

    func add(_ fragment: Fragment, senderID: [UInt8], now: Int64) throws -> Result {
        guard Int(fragment.total) <= Self.maxFragments else { return .rejected }
        let key = senderID + fragment.fragmentID
        let bound = Self.bound(forOriginalType: fragment.originalType)
        guard fragment.data.count <= bound else { try drop(key); return .rejected }
        let set = try database.queryOne("SELECT total, original_type, have, bytes FROM mesh_fragment_sets WHERE set_key = ?", [key])
        var evicted = false
        var have = 0, bytes = 0, replaced = false
        if let set {
            guard try set.get(0, as: Int.self) == Int(fragment.total), try set.get(1, as: Int.self) == Int(fragment.originalType) else {
                return .mismatched
            }
            have = try set.get(2, as: Int.self)
            bytes = try set.get(3, as: Int.self)
            if let previous: Int = try database.scalar("SELECT length(data) FROM mesh_fragments WHERE set_key = ? AND idx = ?",
                                                        [key, Int(fragment.index)]) {
                replaced = true
                bytes -= previous
            }
        } else {
            evicted = try makeRoom(for: senderID)
            _ = try database.execute("""
                INSERT INTO mesh_fragment_sets (set_key, sender, total, original_type, have, bytes, first_at) VALUES (?, ?, ?, ?, 0, 0, ?)
                """, [key, senderID, Int(fragment.total), Int(fragment.originalType), now])
        }
        guard bytes + fragment.data.count <= bound else { try drop(key); return .rejected }
        if !replaced { have += 1 }
        bytes += fragment.data.count
        _ = try database.execute("""
            INSERT OR REPLACE INTO mesh_fragments (set_key, idx, total, original_type, data, first_at) VALUES (?, ?, ?, ?, ?, ?)
            """, [key, Int(fragment.index), Int(fragment.total), Int(fragment.originalType), fragment.data, now])
        guard have == Int(fragment.total) else {
            _ = try database.execute("UPDATE mesh_fragment_sets SET have = ?, bytes = ? WHERE set_key = ?", [have, bytes, key])
            return .stored(replaced: replaced, evicted: evicted)
        }
        var whole: [UInt8] = []
        whole.reserveCapacity(bytes)
        try database.forEachRow("SELECT data FROM mesh_fragments WHERE set_key = ? ORDER BY idx", [key]) { whole += try $0.get(0, as: [UInt8].self) }
        try drop(key)
        return .complete(whole, evicted: evicted)
    }

    /// Evicts one set when `maxSets` are in progress (see the type's summary); true when one was evicted.
    private func makeRoom(for sender: [UInt8]) throws -> Bool {
        var held: [[UInt8]: Int] = [:]
        try database.forEachRow("SELECT sender, count(*) FROM mesh_fragment_sets GROUP BY sender") {
            held[try $0.get(0, as: [UInt8].self)] = try $0.get(1, as: Int.self)
        }
        guard held.values.reduce(0, +) >= Self.maxSets else { return false }
        let senders = held.count + (held[sender] == nil ? 1 : 0)
        let fairShare = max(1, Self.maxSets / senders)
        let victim: [UInt8]?
        if let own = held[sender], own >= fairShare {
            victim = try database.scalar("SELECT set_key FROM mesh_fragment_sets WHERE sender = ? ORDER BY first_at, rowid LIMIT 1", [sender])
        } else {
            // The oldest set among the senders holding the most.
            victim = try database.scalar("""
                SELECT set_key FROM mesh_fragment_sets AS s
                WHERE (SELECT count(*) FROM mesh_fragment_sets AS t WHERE t.sender = s.sender) = ?
                ORDER BY first_at, rowid LIMIT 1
                """, [held.values.max() ?? 0])
        }
        guard let victim else { return false }
        try drop(victim)
        return true
    }

    private func drop(_ key: [UInt8]) throws {
        _ = try database.execute("DELETE FROM mesh_fragments WHERE set_key = ?", [key])
        _ = try database.execute("DELETE FROM mesh_fragment_sets WHERE set_key = ?", [key])
    }
}
