import Cryptography
import Store

/// A Noise session with one peer as the store keeps it: a handshake in progress or an established transport
/// (keys, counters and the replay window), plus the peer state (0x21) received in *this* session.
struct PeerSession {
    enum Phase {
        case handshaking(NoiseHandshake)
        case established(NoiseTransport)
    }

    var peerID: [UInt8]
    var phase: Phase
    /// The authenticated peer state received in this session; a new session starts without one.
    var proof: PeerState?
    var startedAt: Int64

    var transport: NoiseTransport? {
        if case .established(let transport) = phase { return transport }
        return nil
    }

    func serialized() -> [UInt8] {
        var out: [UInt8] = [1] + peerID
        let state: [UInt8]
        switch phase {
        case .handshaking(let handshake): out.append(1); state = handshake.serialized()
        case .established(let transport): out.append(2); state = transport.serialized()
        }
        out.appendBigEndian(UInt32(state.count))
        out += state
        if let proof, let encoded = try? proof.encoded() { out.append(1); out += encoded } else { out.append(0) }
        return out
    }

    init(peerID: [UInt8], phase: Phase, proof: PeerState?, startedAt: Int64) {
        self.peerID = peerID
        self.phase = phase
        self.proof = proof
        self.startedAt = startedAt
    }

    init(serialized bytes: [UInt8], startedAt: Int64) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.byte() == 1 else { throw NoiseError.badState }
            peerID = Array(try reader.take(8))
            let kind = try reader.byte()
            let length = Int(try reader.uint32())
            let state = Array(try reader.take(length))
            switch kind {
            case 1: phase = .handshaking(try NoiseHandshake(serialized: state))
            case 2: phase = .established(try NoiseTransport(serialized: state))
            default: throw NoiseError.badState
            }
            proof = try reader.byte() == 1 ? try PeerState.decode(reader.rest()) : nil
            self.startedAt = startedAt
        } catch is WireError {
            throw NoiseError.badState
        }
    }
}

/// Noise sessions sealed with the store keyring, one per peer, found by the peer id's blind index.
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

    func save(_ session: PeerSession, now: Int64) throws {
        let state: String
        if case .established = session.phase { state = "established" } else { state = "handshaking" }
        let sealed = try keyring.seal(session.serialized(), purpose: Self.purpose)
        _ = try database.execute("""
            INSERT INTO mesh_sessions (peer_index, state, sealed, started_at, updated_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (peer_index) DO UPDATE SET state = excluded.state, sealed = excluded.sealed,
                started_at = excluded.started_at, updated_at = excluded.updated_at
            """, [index(session.peerID), state, sealed, session.startedAt, now])
    }

    func delete(_ peerID: [UInt8]) throws {
        _ = try database.execute("DELETE FROM mesh_sessions WHERE peer_index = ?", [index(peerID)])
    }
}
