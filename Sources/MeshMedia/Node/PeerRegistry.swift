import Cryptography
import Store

/// One verified announce: the identity cache entry for a peer (sealed at rest, found by blind index of its id).
struct PeerRecord: Equatable {
    var peerID: [UInt8]
    var noiseKey: [UInt8]
    var signingKey: [UInt8]
    var nickname: String
    /// nil when the announce had no capabilities TLV.
    var capabilities: Capabilities?
    var announcedAt: Int64

    var fingerprint: [UInt8] { NodeIdentity.fingerprint(noiseKey: noiseKey) }
    var advertisesPrivateMedia: Bool { capabilities?.contains(.privateMedia) == true }

    func serialized() -> [UInt8] {
        var out: [UInt8] = [1] + peerID + noiseKey + signingKey
        out.append(capabilities == nil ? 0 : 1)
        out.appendBigEndian(capabilities?.rawValue ?? 0)
        out.appendBigEndian(UInt64(bitPattern: announcedAt))
        return out + Array(nickname.utf8)
    }

    init(peerID: [UInt8], noiseKey: [UInt8], signingKey: [UInt8], nickname: String, capabilities: Capabilities?, announcedAt: Int64) {
        self.peerID = peerID
        self.noiseKey = noiseKey
        self.signingKey = signingKey
        self.nickname = nickname
        self.capabilities = capabilities
        self.announcedAt = announcedAt
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        guard try reader.byte() == 1 else { throw WireError.unsupportedVersion }
        peerID = Array(try reader.take(8))
        noiseKey = Array(try reader.take(32))
        signingKey = Array(try reader.take(32))
        let hasCaps = try reader.byte() == 1
        let caps = try reader.uint64()
        capabilities = hasCaps ? Capabilities(rawValue: caps) : nil
        if !hasCaps && caps != 0 { throw WireError.nonCanonical }
        announcedAt = Int64(bitPattern: try reader.uint64())
        nickname = String(decoding: reader.rest(), as: UTF8.self)
    }
}

/// The identity cache (verified announces) and the capability pins, both sealed with the store keyring.
struct PeerRegistry {
    let database: Database
    let keyring: StoreKeyring

    static let recordPurpose = "mesh-peer"
    static let indexPurpose = "mesh-peer-id"
    static let pinPurpose = "mesh-pin"
    static let pinIndexPurpose = "mesh-pin-fingerprint"

    func peerIndex(_ peerID: [UInt8]) -> [UInt8] { keyring.blindIndex(peerID, purpose: Self.indexPurpose) }

    func record(for peerID: [UInt8]) throws -> PeerRecord? {
        guard let sealed: [UInt8] = try database.scalar("SELECT sealed FROM mesh_peers WHERE peer_index = ?", [peerIndex(peerID)]) else { return nil }
        return try PeerRecord(serialized: try keyring.open(sealed, purpose: Self.recordPurpose).copyBytes())
    }

    func save(_ record: PeerRecord, now: Int64) throws {
        let sealed = try keyring.seal(record.serialized(), purpose: Self.recordPurpose)
        _ = try database.execute("""
            INSERT INTO mesh_peers (peer_index, sealed, updated_at) VALUES (?, ?, ?)
            ON CONFLICT (peer_index) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at
            """, [peerIndex(record.peerID), sealed, now])
    }

    func all() throws -> [PeerRecord] {
        try database.query("SELECT sealed FROM mesh_peers").map {
            try PeerRecord(serialized: try keyring.open(try $0.get(0, as: [UInt8].self), purpose: Self.recordPurpose).copyBytes())
        }
    }

    func isPinned(fingerprint: [UInt8]) throws -> Bool {
        try database.queryOne("SELECT 1 FROM mesh_pins WHERE fingerprint_index = ?",
                              [keyring.blindIndex(fingerprint, purpose: Self.pinIndexPurpose)]) != nil
    }

    /// Pins `fingerprint`; true when it was not pinned before.
    @discardableResult
    func pin(fingerprint: [UInt8], now: Int64) throws -> Bool {
        let sealed = try keyring.seal(fingerprint, purpose: Self.pinPurpose)
        return try database.execute("INSERT OR IGNORE INTO mesh_pins (fingerprint_index, sealed, pinned_at) VALUES (?, ?, ?)",
                                    [keyring.blindIndex(fingerprint, purpose: Self.pinIndexPurpose), sealed, now]) > 0
    }

    /// The pin rule, run after either event (a completed session or a verified announce): pin the fingerprint
    /// when the session authenticated the same static key as the capability-bearing registry entry.
    @discardableResult
    func pinIfAuthenticated(peerID: [UInt8], sessionRemoteStatic: [UInt8]?, now: Int64) throws -> Bool {
        guard let sessionRemoteStatic, let record = try record(for: peerID), record.advertisesPrivateMedia,
              ConstantTime.equals(record.noiseKey, sessionRemoteStatic) else { return false }
        return try pin(fingerprint: record.fingerprint, now: now)
    }
}
