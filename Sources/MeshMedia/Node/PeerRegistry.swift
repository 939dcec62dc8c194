import Cryptography
import Store

/// The identity cache (`PeerRecord`: session-bound signing keys and announce claims) and the capability pins,
/// both sealed with the store keyring.
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

    /// Binds `signingKey` to the Noise static key a session proved, as the peer's own 0x21 states it: the one
    /// authoritative binding. Replaces any earlier binding or provisional claim; announce claims under other keys
    /// stay listed as conflicting. Returns true when the binding changed.
    @discardableResult
    func bind(peerID: [UInt8], sessionRemoteStatic: [UInt8], signingKey: [UInt8], now: Int64) throws -> Bool {
        var record = try record(for: peerID) ?? PeerRecord(peerID: peerID, noiseKey: sessionRemoteStatic)
        if !ConstantTime.equals(record.noiseKey, sessionRemoteStatic) {
            // An announce under this peer id named another Noise key (a peer-id collision): the session wins.
            record = PeerRecord(peerID: peerID, noiseKey: sessionRemoteStatic)
        }
        if let bound = record.boundSigningKey, ConstantTime.equals(bound, signingKey) { return false }
        record.boundSigningKey = signingKey
        try save(record, now: now)
        return true
    }

    /// The pin rule, run after each event that can complete it (a completed session, the peer's 0x21, a verified
    /// announce): pin the fingerprint when a session authenticated the same static key as the registry entry, the
    /// peer bound its signing key in a session, and the announce made under that very key carries privateMedia.
    /// A provisional claim (someone's announce) never pins.
    @discardableResult
    func pinIfAuthenticated(peerID: [UInt8], sessionRemoteStatic: [UInt8]?, now: Int64) throws -> Bool {
        guard let sessionRemoteStatic, let record = try record(for: peerID), record.standing == .authenticated,
              record.advertisesPrivateMedia, ConstantTime.equals(record.noiseKey, sessionRemoteStatic) else { return false }
        return try pin(fingerprint: record.fingerprint, now: now)
    }
}
