import Store

/// Fragment reassembly in the store, with the receiver bounds from the reference: a set lives 30 s, holds at
/// most 1,179,760 bytes for fileTransfer/noiseEncrypted originals (1 MiB otherwise), and at most
/// `maxSets` sets are open at once, and a set declares at most `maxFragments` fragments (so the per-fragment
/// bookkeeping over a set stays bounded).
struct Reassembly {
    let database: Database

    static let lifetimeMilliseconds: Int64 = 30_000
    static let maxSets = 64
    static let largeBound = 1_179_760
    static let defaultBound = 1_048_576
    /// Clients cut 469-byte chunks (386 with an 8-hop route): the largest packet is then at most 3,057 fragments.
    /// Android caps a set at 256.
    static let maxFragments = 4_096

    enum Result {
        case stored
        case complete([UInt8])
        case rejected
    }

    static func bound(forOriginalType type: UInt8) -> Int {
        type == BitchatPacket.MessageType.fileTransfer.rawValue || type == BitchatPacket.MessageType.noiseEncrypted.rawValue
            ? largeBound : defaultBound
    }

    /// Drops sets older than their lifetime; returns the fragments dropped.
    func expire(now: Int64) throws -> Int {
        try database.execute("DELETE FROM mesh_fragments WHERE first_at < ?", [now - Self.lifetimeMilliseconds])
    }

    func add(_ fragment: Fragment, senderID: [UInt8], now: Int64) throws -> Result {
        guard Int(fragment.total) <= Self.maxFragments else { return .rejected }
        let key = senderID + fragment.fragmentID
        let row = try database.queryOne("""
            SELECT count(*), coalesce(sum(length(data)), 0), min(total), max(total), min(original_type), max(original_type), min(first_at)
            FROM mesh_fragments WHERE set_key = ?
            """, [key])!
        let count = try row.get(0, as: Int.self)
        if count == 0 {
            let open: Int = try database.scalar("SELECT count(DISTINCT set_key) FROM mesh_fragments") ?? 0
            guard open < Self.maxSets else { return .rejected }
        } else {
            guard try row.get(2, as: Int.self) == Int(fragment.total), try row.get(4, as: Int.self) == Int(fragment.originalType) else {
                try drop(key)
                return .rejected
            }
        }
        let bytes = try row.get(1, as: Int.self)
        guard bytes + fragment.data.count <= Self.bound(forOriginalType: fragment.originalType) else {
            try drop(key)
            return .rejected
        }
        let firstAt = count == 0 ? now : try row.get(6, as: Int64.self)
        _ = try database.execute("""
            INSERT OR IGNORE INTO mesh_fragments (set_key, idx, total, original_type, data, first_at) VALUES (?, ?, ?, ?, ?, ?)
            """, [key, Int(fragment.index), Int(fragment.total), Int(fragment.originalType), fragment.data, firstAt])
        let have: Int = try database.scalar("SELECT count(*) FROM mesh_fragments WHERE set_key = ?", [key]) ?? 0
        guard have == Int(fragment.total) else { return .stored }
        var whole: [UInt8] = []
        try database.forEachRow("SELECT data FROM mesh_fragments WHERE set_key = ? ORDER BY idx", [key]) { whole += try $0.get(0, as: [UInt8].self) }
        try drop(key)
        return .complete(whole)
    }

    private func drop(_ key: [UInt8]) throws {
        _ = try database.execute("DELETE FROM mesh_fragments WHERE set_key = ?", [key])
    }
}
