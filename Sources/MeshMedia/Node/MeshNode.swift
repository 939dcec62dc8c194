import Cryptography
import Foundation
import Runner
import Store

/// One mesh node over its store: its identity, the identity cache, sessions, and the emulated radio.
///
/// Everything that would go on BLE is encoded (and fragmented to the 512-byte MTU) into `mesh_outbox`;
/// `job mesh exchange` carries frames to a neighbour's `mesh_inbox`. Methods that write expect to run inside
/// the caller's write transaction.
final class MeshNode {
    let database: Database
    let keyring: StoreKeyring
    let identity: NodeIdentity
    /// The injected clock, Unix ms.
    let now: Int64
    let registry: PeerRegistry
    let sessions: SessionStore

    /// Hops a new packet may take.
    static let defaultTTL: UInt8 = 7

    init(database: Database, keyring: StoreKeyring, identity: NodeIdentity, now: Int64) {
        self.database = database
        self.keyring = keyring
        self.identity = identity
        self.now = now
        registry = PeerRegistry(database: database, keyring: keyring)
        sessions = SessionStore(database: database, keyring: keyring)
    }

    /// Opens the node of the store behind `context` (configuration error when there is none).
    static func open(_ context: JobContext) throws -> MeshNode {
        let keyring = try context.keyring()
        let identity = try NodeIdentity.require(database: context.database, keyring: keyring)
        return MeshNode(database: context.database, keyring: keyring, identity: identity, now: context.nowMilliseconds)
    }

    var timestamp: UInt64 { UInt64(max(0, now)) }

    // MARK: Building packets

    /// Signs `packet` with the node's Ed25519 key over its signing preimage.
    func signed(_ packet: BitchatPacket) throws -> BitchatPacket {
        var copy = packet
        copy.signature = try identity.signing.sign(try packet.signingPreimage())
        return copy
    }

    /// The signed announce: nickname, Noise key, signing key and (unless emulating an older client) capabilities.
    func announcePacket() throws -> BitchatPacket {
        let announce = Announce(nickname: identity.nickname, noisePublicKey: identity.noise.publicKey,
                                signingPublicKey: identity.signing.publicKey, capabilities: identity.emulation.capabilities)
        return try signed(BitchatPacket(type: .announce, ttl: Self.defaultTTL, timestamp: timestamp, senderID: identity.peerID,
                                        payload: try announce.encoded()))
    }

    /// Transmits the signed announce and records when, for the outbox pass's cadence. Returns the frame count.
    @discardableResult
    func announce() throws -> Int {
        let frames = try transmit(try announcePacket())
        _ = try database.execute("UPDATE mesh_node SET announced_at = ? WHERE id = 1", [now])
        return frames
    }

    /// Whether an announce is due: none yet, or the last one is `interval` ms old (or from the future).
    func announceDue(interval: Int64) throws -> Bool {
        guard let last = try database.scalar("SELECT announced_at FROM mesh_node WHERE id = 1") as Int64? else { return true }
        return now - last >= interval || last > now
    }

    /// A packet directed to `peerID`; v2 when the payload needs a 4-byte length, a source route is given, or it carries
    /// a private file (`privateMedia`: iOS sends every file packet, encrypted or legacy, as v2 whatever its size).
    func directed(_ type: BitchatPacket.MessageType, to peerID: [UInt8], payload: [UInt8], route: [[UInt8]] = [],
                  privateMedia: Bool = false) -> BitchatPacket {
        let version: UInt8 = privateMedia || payload.count > Int(UInt16.max) || !route.isEmpty ? 2 : 1
        return BitchatPacket(version: version, type: type, ttl: Self.defaultTTL, timestamp: timestamp,
                             senderID: identity.peerID, recipientID: peerID, route: route, payload: payload)
    }

    // MARK: The emulated radio

    /// Puts `packet` on the air: one frame, or its fragments. Returns the number of frames. `sendID` ties the
    /// frames to the private-file send they carry, so `mesh exchange` can tell when that send was carried.
    /// `lifetime` shortens how long the frames stay on the air (never lengthens it).
    @discardableResult
    func transmit(_ packet: BitchatPacket, sendID: Int64? = nil, lifetime: Int64? = nil) throws -> Int {
        let frames = try FragmentPlanner.frames(for: packet, fragmentID: try SecureRandom.bytes(count: 8))
        for frame in frames { try enqueue(frame, sendID: sendID, lifetime: lifetime) }
        return frames.count
    }

    /// Puts one frame this node built on the air, with its retention:
    /// a frame carrying a file in the clear is handed over to its next hop and expires early (`OutboxRetention`).
    /// `sendID` ties the frame to the private-file send it carries.
    func enqueue(_ frame: BitchatPacket, sendID: Int64? = nil, lifetime: Int64? = nil) throws {
        try enqueue(wire: try frame.encoded(), of: frame, sendID: sendID, lifetime: lifetime)
    }

    /// Puts the bytes `wire` of `frame` on the air exactly as given: how a relay forwards a frame it heard.
    func enqueue(wire: [UInt8], of frame: BitchatPacket, sendID: Int64? = nil, lifetime: Int64? = nil) throws {
        let plan = OutboxRetention.plan(for: frame, me: identity.peerID, now: now)
        let expiresAt = lifetime.map { min(plan.expiresAt, now + $0) } ?? plan.expiresAt
        _ = try database.execute("INSERT INTO mesh_outbox (frame, created_at, handover_to, expires_at, send_id) VALUES (?, ?, ?, ?, ?)",
                                 [wire, now, plan.handoverTo, expiresAt, sendID])
    }

    // MARK: Sessions

    /// Starts a handshake as initiator with `peerID` and transmits message 1. It replaces any handshake in
    /// progress; an established session stays in use until the new handshake completes.
    func startHandshake(with peerID: [UInt8]) throws {
        var handshake = NoiseHandshake(role: .initiator, localStatic: identity.noise)
        let message = try handshake.writeMessage()
        var session = try sessions.load(peerID) ?? PeerSession(peerID: peerID, handshake: handshake, now: now)
        session.pending = handshake
        session.pendingStartedAt = now
        try sessions.save(session, now: now)
        try transmit(directed(.noiseHandshake, to: peerID, payload: message))
    }

    /// Sends this node's authenticated peer state (0x21) inside the established session; called after each
    /// completed handshake.
    func sendPeerState(_ session: inout PeerSession) throws {
        guard var transport = session.established else { return }
        let capabilities = identity.emulation.capabilities ?? Capabilities()
        let state = PeerState(capabilities: capabilities, signingPublicKey: identity.signing.publicKey)
        let ciphertext = try transport.encrypt(NoisePayload(kind: .authenticatedPeerState, body: try state.encoded()).encoded())
        session.established = transport
        try transmit(directed(.noiseEncrypted, to: session.peerID, payload: ciphertext))
    }
}
