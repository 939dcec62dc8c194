import Cryptography
import Store

/// The Noise state kept for one peer: the established session (transport keys, counters, replay window, and the
/// peer state 0x21 received in *this* session) and, beside it, a handshake in progress.
///
/// An established session survives until a new handshake with the same static key completes: a first handshake
/// message (32 bytes anyone can send under the peer's id) only starts a pending handshake next to it. A pending
/// handshake survives the same way: a later first message starts a new one and the displaced ones that were waiting
/// for the peer are kept (`earlier`, the oldest `maxEarlier`), so a spoofed opener between messages 2 and 3 cannot
/// end the genuine handshake; the peer's next message is tried on each until one completes.
struct PeerSession {
    var peerID: [UInt8]
    var established: NoiseTransport?
    /// The authenticated peer state received in the established session; a new session starts without one.
    var proof: PeerState?
    /// When the established session completed.
    var startedAt: Int64
    var pending: NoiseHandshake?
    var pendingStartedAt: Int64
    /// Handshakes a later first message displaced while they waited for the peer, oldest first.
    var earlier: [NoiseHandshake] = []

    /// Displaced handshakes kept beside the pending one.
    static let maxEarlier = 3

    /// Starts `handshake` as the pending one; the one it displaces is kept if it was waiting for the peer and
    /// fewer than `maxEarlier` are kept already (the oldest stay: a flood of openers cannot push the first out).
    mutating func startPending(_ handshake: NoiseHandshake, now: Int64) {
        if let waiting = pending, !waiting.isMyTurnToWrite, earlier.count < Self.maxEarlier { earlier.append(waiting) }
        pending = handshake
        pendingStartedAt = now
    }

    var transport: NoiseTransport? { established }

    /// A session with only a handshake in progress.
    init(peerID: [UInt8], handshake: NoiseHandshake, now: Int64) {
        self.peerID = peerID
        established = nil
        proof = nil
        startedAt = now
        pending = handshake
        pendingStartedAt = now
    }

    init(peerID: [UInt8], established: NoiseTransport?, proof: PeerState?, startedAt: Int64, pending: NoiseHandshake?, pendingStartedAt: Int64) {
        self.peerID = peerID
        self.established = established
        self.proof = proof
        self.startedAt = startedAt
        self.pending = pending
        self.pendingStartedAt = pendingStartedAt
    }

    /// Whether a sender waiting for proof should start a new handshake: no proof yet, and neither the pending
    /// handshake nor the established session (its proof may be in flight) is younger than `timeout`.
    /// A time ahead of `now` (a pass once ran with a later clock) counts as old, so it never postpones a handshake.
    func needsHandshake(now: Int64, timeout: Int64) -> Bool {
        func young(_ time: Int64) -> Bool { time <= now && now - time < timeout }
        if established != nil, proof != nil { return false }
        if pending != nil, young(pendingStartedAt) { return false }
        if established != nil, young(startedAt) { return false }
        return true
    }

    func serialized() -> [UInt8] {
        var out: [UInt8] = [earlier.isEmpty ? 2 : 3] + peerID
        out.appendBigEndian(UInt64(bitPattern: startedAt))
        out.appendBigEndian(UInt64(bitPattern: pendingStartedAt))
        for state in [established?.serialized(), pending?.serialized()] {
            if let state {
                out.append(1)
                out.appendBigEndian(UInt32(state.count))
                out += state
            } else {
                out.append(0)
            }
        }
        if !earlier.isEmpty {
            out.append(UInt8(earlier.count))
            for handshake in earlier {
                let state = handshake.serialized()
                out.appendBigEndian(UInt32(state.count))
                out += state
            }
        }
        if let proof, let encoded = try? proof.encoded() { out.append(1); out += encoded } else { out.append(0) }
        return out
    }

    init(serialized bytes: [UInt8], startedAt: Int64) throws {
        var reader = ByteReader(bytes)
        do {
            func state(_ reader: inout ByteReader) throws -> [UInt8]? {
                switch try reader.byte() {
                case 0: return nil
                case 1: return Array(try reader.take(Int(try reader.uint32())))
                default: throw NoiseError.badState
                }
            }
            switch try reader.byte() {
            case 1:
                // Before sessions kept a pending handshake: one phase, either kind.
                peerID = Array(try reader.take(8))
                let kind = try reader.byte()
                let state = Array(try reader.take(Int(try reader.uint32())))
                switch kind {
                case 1: established = nil; pending = try NoiseHandshake(serialized: state)
                case 2: established = try NoiseTransport(serialized: state); pending = nil
                default: throw NoiseError.badState
                }
                self.startedAt = startedAt
                pendingStartedAt = startedAt
            case let version where version == 2 || version == 3:
                peerID = Array(try reader.take(8))
                self.startedAt = Int64(bitPattern: try reader.uint64())
                pendingStartedAt = Int64(bitPattern: try reader.uint64())
                established = try state(&reader).map { try NoiseTransport(serialized: $0) }
                pending = try state(&reader).map { try NoiseHandshake(serialized: $0) }
                if version == 3 {
                    let count = Int(try reader.byte())
                    guard count <= Self.maxEarlier else { throw NoiseError.badState }
                    for _ in 0..<count { earlier.append(try NoiseHandshake(serialized: Array(try reader.take(Int(try reader.uint32()))))) }
                }
            default:
                throw NoiseError.badState
            }
            proof = try reader.byte() == 1 ? try PeerState.decode(reader.rest()) : nil
        } catch is WireError {
            throw NoiseError.badState
        }
    }
}

/// Noise sessions sealed with the store keyring, one row per peer, found by the peer id's blind index.
struct SessionStore {
    let database: Database
    let keyring: StoreKeyring
    static let purpose = "mesh-session"

    func index(_ peerID: [UInt8]) -> [UInt8] { keyring.blindIndex(peerID, purpose: PeerRegistry.indexPurpose) }

    func load(_ peerID: [UInt8]) throws -> PeerSession? {
        guard let row = try database.queryOne("SELECT sealed, started_at FROM mesh_sessions WHERE peer_index = ?", [index(peerID)]) else { return nil }
        let bytes = try keyring.open(try row.get(0, as: [UInt8].self), purpose: Self.purpose).copyBytes()
        return try PeerSession(serialized: bytes, startedAt: try row.get(1, as: Int64.self))
    }

    /// Saves the session; a row with neither an established session nor a pending handshake is deleted.
    func save(_ session: PeerSession, now: Int64) throws {
        guard session.established != nil || session.pending != nil else { return try delete(session.peerID) }
        let state = session.established != nil ? "established" : "handshaking"
        let startedAt = session.established != nil ? session.startedAt : session.pendingStartedAt
        let sealed = try keyring.seal(session.serialized(), purpose: Self.purpose)
        _ = try database.execute("""
            INSERT INTO mesh_sessions (peer_index, state, sealed, started_at, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (peer_index) DO UPDATE SET state = excluded.state, sealed = excluded.sealed,
                started_at = excluded.started_at, updated_at = excluded.updated_at
            """, [index(session.peerID), state, sealed, startedAt, now])
    }

    func delete(_ peerID: [UInt8]) throws {
        _ = try database.execute("DELETE FROM mesh_sessions WHERE peer_index = ?", [index(peerID)])
    }
}
