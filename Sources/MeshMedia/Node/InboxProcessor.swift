import Cryptography
import Runner
import Store

/// What `media-inbox` does with one heard frame — the receive rules of the seed.
///
/// - Frames are decoded (any bytes: a packet or a typed rejection), deduplicated by a hash that ignores TTL,
///   and relayed with TTL − 1 when directed elsewhere (or broadcast) so a node between two others carries them.
///   A relay forwards the bytes it heard with only the TTL byte changed: never re-encoded, recompressed or
///   re-padded, so the sender's signature still verifies for clients that check the wire form.
/// - Announces are verified only when signed by the announced Ed25519 key and sent from the peer id of the
///   announced Noise key. A verified announce is a claim (`PeerRecord`): it never replaces or evicts a signing
///   key the peer bound in a session, and a second claim with another key makes an unbound peer a conflict.
///   It may complete a pin, but never pins by itself.
/// - Noise handshakes progress one message per frame, beside any established session, which survives until a
///   new handshake completes (as a pending handshake survives a later first message, `PeerSession`); first
///   messages from ids this node knows nothing of are answered at most `strangerHandshakesPerMinute` a minute and
///   their replies stay on the air 5 minutes; a completed session sends this node's peer state (0x21). The peer's 0x21 binds its
///   signing key to the static key the session proved (the only authoritative binding) and may complete a pin.
///   Handshake collisions resolve by peer id (the lower id stays initiator).
/// - Noise 0x20 → decrypt and deliver; 0x09 → decrypt, canonicalize and deliver; the 64 KiB limit holds for
///   everything else (`NoiseTransport.decrypt`). Signed directed `fileTransfer` → verify against the sender's
///   signing key in force (bound, or the one provisional claim) and deliver; unsigned, forged, undirected, from
///   an unknown sender or from a peer whose claims conflict → reject; one whose timestamp is more than 120 s off this
///   node's clock → reject (`rejected_stale`), so a captured frame replays only within the window, where the
///   duplicate hashes (kept a day) catch it — even after the delivered file was deleted.
/// - Fragments reassemble within the receiver bounds and the whole packet is then handled like any other — once:
///   a fragment of a fragment is refused (as bitchat does), so no attacker-chosen depth is ever recursed into, and
///   a frame larger than the largest reassembled packet is refused before it is decoded.
struct InboxProcessor {
    let node: MeshNode
    let media: MediaInbox

    /// Handles one frame, adding what happened to `counts` (fixed words only).
    func process(frame: [UInt8], counts: inout Counts) throws {
        guard frame.count <= Self.maxFrameBytes else { counts.add("rejected_oversize"); return }
        guard let packet = try? BitchatPacket.decode(frame) else { counts.add("malformed"); return }
        try handle(packet, wire: frame, counts: &counts)
    }

    /// Offset of the TTL byte in both packet versions.
    static let ttlOffset = 2

    /// The largest frame worth decoding: a whole packet of the largest reassembly bound with a v2 header, a full
    /// route and a signature. Anything larger cannot be a frame of a packet this node would accept.
    static let maxFrameBytes = Reassembly.largeBound + 16 + 8 + 8 + 1 + 255 * 8 + 64

    private var me: [UInt8] { node.identity.peerID }

    /// How far a legacy `fileTransfer`'s timestamp may be from this node's clock, either way (as iOS).
    static let clockWindowMilliseconds: Int64 = 120_000

    static func withinClockWindow(_ timestamp: UInt64, now: Int64) -> Bool {
        let sent = Int64(clamping: timestamp)
        return sent >= now - clockWindowMilliseconds && sent <= now + clockWindowMilliseconds
    }

    static func packetHash(_ packet: BitchatPacket) throws -> [UInt8] {
        var copy = packet
        copy.ttl = 0
        copy.isRSR = false
        return SHA256.hash(try copy.encoded(padding: false))
    }

    /// Handles one packet; `wire` is the frame as heard (nil for a packet reassembled from fragments, never relayed).
    private func handle(_ packet: BitchatPacket, wire: [UInt8]?, counts: inout Counts) throws {
        guard packet.senderID != me else { counts.add("own"); return }
        let hash = try Self.packetHash(packet)
        let fresh = try node.database.execute("INSERT OR IGNORE INTO mesh_seen (packet_hash, seen_at) VALUES (?, ?)", [hash, node.now])
        guard fresh > 0 else { counts.add("duplicate"); return }

        let forMe = packet.recipientID == nil || packet.recipientID == me
        if let wire, packet.recipientID != me, packet.ttl > 1 {
            var relayed = packet
            relayed.ttl -= 1
            var forwarded = wire
            forwarded[Self.ttlOffset] = relayed.ttl
            try node.enqueue(wire: forwarded, of: relayed)
            counts.add("relayed")
        }
        guard forMe else { return }
        switch packet.messageType {
        case .announce: try handleAnnounce(packet, counts: &counts)
        case .noiseHandshake where packet.recipientID == me: try handleHandshake(packet, counts: &counts)
        case .noiseEncrypted where packet.recipientID == me: try handleEncrypted(packet, counts: &counts)
        case .fileTransfer: try handleLegacyFile(packet, counts: &counts)
        case .fragment: try handleFragment(packet, counts: &counts)
        default: counts.add("ignored")
        }
    }

    // MARK: Announces

    private func handleAnnounce(_ packet: BitchatPacket, counts: inout Counts) throws {
        guard let signature = packet.signature, let announce = try? Announce.decode(packet.payload),
              NodeIdentity.peerID(noiseKey: announce.noisePublicKey) == packet.senderID,
              let key = try? Ed25519PublicKey(rawRepresentation: announce.signingPublicKey),
              key.isValidSignature(signature, for: try packet.signingPreimage()) else {
            counts.add("announce_rejected")
            return
        }
        let claim = PeerRecord.Claim(signingKey: announce.signingPublicKey, nickname: announce.nickname,
                                     capabilities: announce.capabilities, announcedAt: Int64(clamping: packet.timestamp))
        var record = try node.registry.record(for: packet.senderID)
            ?? PeerRecord(peerID: packet.senderID, noiseKey: announce.noisePublicKey)
        guard ConstantTime.equals(record.noiseKey, announce.noisePublicKey) else {
            // Another Noise key under a known peer id (a peer-id collision): never replaces the known key.
            counts.add("announce_rejected")
            return
        }
        let wasConflict = record.standing == .conflict
        guard record.addClaim(claim) else { counts.add("announce_stale"); return }
        try node.registry.save(record, now: node.now)
        if let signingKey = record.signingKey, ConstantTime.equals(signingKey, claim.signingKey) {
            counts.add("announce_verified")
        } else {
            // A claim against the bound key (kept for `mesh peers`, never in force), or a conflict between claims.
            counts.add("announce_conflict")
            if !wasConflict && record.standing == .conflict { counts.add("identity_conflict") }
        }
        // Announce after session: pin when an established session authenticated this very key.
        if let transport = try node.sessions.load(packet.senderID)?.transport,
           try node.registry.pinIfAuthenticated(peerID: packet.senderID, sessionRemoteStatic: transport.remoteStatic, now: node.now) {
            counts.add("pinned")
        }
    }

    // MARK: Noise handshake

    private func handleHandshake(_ packet: BitchatPacket, counts: inout Counts) throws {
        let peer = packet.senderID
        let message = packet.payload
        let session = try node.sessions.load(peer)
        /// Noise message 1 of XX with an empty payload is exactly the 32-byte ephemeral key.
        let isFirstMessage = message.count == 32
        do {
            if let waiting = session?.pending, !waiting.isMyTurnToWrite {
                if waiting.role == .initiator, waiting.messageIndex == 1, isFirstMessage {
                    // Both sides initiated: the lower peer id keeps the initiator role.
                    if me.lexicographicallyPrecedes(peer) { counts.add("handshake_collision"); return }
                    try respond(to: message, from: peer, session: session, counts: &counts)
                    return
                }
                if isFirstMessage {
                    // The peer restarted, or someone sent a first message under its id: a new pending handshake,
                    // the waiting one kept beside it.
                    try respond(to: message, from: peer, session: session, counts: &counts)
                    return
                }
                // The peer's next message: tried on the pending handshake, then on the displaced ones, newest first.
                for var handshake in [waiting] + (session?.earlier ?? []).reversed() where !handshake.isMyTurnToWrite {
                    guard (try? handshake.readMessage(message)) != nil else { continue }
                    if handshake.role == .initiator {
                        let third = try handshake.writeMessage()
                        try node.transmit(node.directed(.noiseHandshake, to: peer, payload: third))
                    }
                    try complete(handshake, with: peer, replacing: session, counts: &counts)
                    return
                }
                // No handshake took it: a forged or stray message changes nothing (the waiting ones stay until
                // one completes, a new one replaces them, or they expire with `MeshUpkeep`).
                counts.add("handshake_failed")
                return
            }
            // No handshake waiting for the peer (none, or only an established session): only a first message fits.
            guard isFirstMessage else { counts.add("handshake_unexpected"); return }
            try respond(to: message, from: peer, session: session, counts: &counts)
        } catch is NoiseError {
            // A failed handshake changes nothing stored; the established session, if any, is untouched.
            counts.add("handshake_failed")
        }
    }

    /// First messages answered per minute for openers this node knows nothing of (no announce heard, no session):
    /// beyond it they get no reply and leave nothing stored, however many spoofed ids open handshakes.
    static let strangerHandshakesPerMinute = 32
    /// How long the reply to such an opener stays on the air (a known peer's reply stays the day frames stay).
    static let strangerReplyLifetimeMilliseconds: Int64 = 300_000

    /// A first message: become responder and answer with message 2. The pending handshake replaces any other
    /// pending one (kept beside it while it waits for the peer, `PeerSession.startPending`), never the established
    /// session.
    private func respond(to message: [UInt8], from peer: [UInt8], session: PeerSession?, counts: inout Counts) throws {
        let stranger = session?.established == nil, unknown = try node.registry.record(for: peer) == nil
        if stranger && unknown {
            let recent: Int = try node.database.scalar("SELECT count(*) FROM mesh_sessions WHERE state = 'handshaking' AND started_at > ?",
                                                       [node.now - 60_000]) ?? 0
            guard recent < Self.strangerHandshakesPerMinute else { counts.add("handshake_throttled"); return }
        }
        var handshake = NoiseHandshake(role: .responder, localStatic: node.identity.noise)
        _ = try handshake.readMessage(message)
        let second = try handshake.writeMessage()
        var updated = session ?? PeerSession(peerID: peer, handshake: handshake, now: node.now)
        if session != nil { updated.startPending(handshake, now: node.now) }
        try node.sessions.save(updated, now: node.now)
        try node.transmit(node.directed(.noiseHandshake, to: peer, payload: second),
                          lifetime: stranger && unknown ? Self.strangerReplyLifetimeMilliseconds : nil)
        counts.add("handshake_step")
    }

    /// The third message is through: the new session replaces the established one, which must have proved the
    /// same static key.
    private func complete(_ handshake: NoiseHandshake, with peer: [UInt8], replacing old: PeerSession?, counts: inout Counts) throws {
        let transport = try handshake.transport()
        guard NodeIdentity.peerID(noiseKey: transport.remoteStatic) == peer else { throw NoiseError.badKey }
        if let previous = old?.established, !ConstantTime.equals(previous.remoteStatic, transport.remoteStatic) { throw NoiseError.badKey }
        var session = PeerSession(peerID: peer, established: transport, proof: nil, startedAt: node.now, pending: nil, pendingStartedAt: node.now)
        try node.sendPeerState(&session)
        try node.sessions.save(session, now: node.now)
        counts.add("session_established")
        // Session after announce: pin when the capability-bearing registry entry has this static key.
        if try node.registry.pinIfAuthenticated(peerID: peer, sessionRemoteStatic: transport.remoteStatic, now: node.now) {
            counts.add("pinned")
        }
    }

    // MARK: Noise transport

    private func handleEncrypted(_ packet: BitchatPacket, counts: inout Counts) throws {
        guard var session = try node.sessions.load(packet.senderID), var transport = session.established else {
            counts.add("no_session")
            return
        }
        let plaintext: [UInt8]
        do {
            plaintext = try transport.decrypt(packet.payload)
        } catch NoiseError.replayed {
            counts.add("replayed"); return
        } catch NoiseError.messageTooLarge {
            counts.add("rejected_too_large"); return
        } catch {
            counts.add("decrypt_failed"); return
        }
        session.established = transport
        guard let payload = try? NoisePayload.decode(plaintext) else {
            try node.sessions.save(session, now: node.now)
            counts.add("malformed")
            return
        }
        switch payload.kind {
        case .authenticatedPeerState:
            guard let state = try? PeerState.decode(payload.body) else {
                try node.sessions.save(session, now: node.now)
                counts.add("malformed")
                return
            }
            session.proof = state
            try node.sessions.save(session, now: node.now)
            counts.add("peer_state")
            // The peer itself, in a session that proved its static key: the authoritative signing-key binding.
            if try node.registry.bind(peerID: packet.senderID, sessionRemoteStatic: transport.remoteStatic,
                                      signingKey: state.signingPublicKey, now: node.now) {
                counts.add("identity_bound")
            }
            if try node.registry.pinIfAuthenticated(peerID: packet.senderID, sessionRemoteStatic: transport.remoteStatic, now: node.now) {
                counts.add("pinned")
            }
        case .privateFile:
            try node.sessions.save(session, now: node.now)
            guard let file = try? FilePacket.decode(payload.body) else { counts.add("rejected_file"); return }
            try deliver(file, from: packet.senderID, form: payload.usedAlias ? .alias : .encrypted, counts: &counts)
        default:
            try node.sessions.save(session, now: node.now)
            counts.add("ignored")
        }
    }

    // MARK: Legacy fileTransfer

    private func handleLegacyFile(_ packet: BitchatPacket, counts: inout Counts) throws {
        guard packet.recipientID == me else { counts.add("rejected_undirected"); return }
        // iOS drops packets more than 120 s off its clock: a captured legacy frame cannot be replayed later.
        guard Self.withinClockWindow(packet.timestamp, now: node.now) else { counts.add("rejected_stale"); return }
        guard let signature = packet.signature else { counts.add("rejected_unsigned"); return }
        guard let record = try node.registry.record(for: packet.senderID) else { counts.add("rejected_unknown_sender"); return }
        // Conflicting announce claims and no session binding: neither key is trusted until a session settles it.
        guard let signingKey = record.signingKey else { counts.add("rejected_identity_conflict"); return }
        guard let key = try? Ed25519PublicKey(rawRepresentation: signingKey),
              key.isValidSignature(signature, for: try packet.signingPreimage()) else {
            counts.add("rejected_forged")
            return
        }
        guard let file = try? FilePacket.decode(packet.payload) else { counts.add("rejected_file"); return }
        if record.standing == .provisional { counts.add("legacy_sender_provisional") }
        try deliver(file, from: packet.senderID, form: .legacy, counts: &counts)
    }

    private func deliver(_ file: FilePacket, from sender: [UInt8], form: MediaInbox.Form, counts: inout Counts) throws {
        if try media.deliver(file, from: sender, form: form, now: node.now) {
            switch form {
            case .encrypted: counts.add("delivered_encrypted")
            case .alias: counts.add("delivered_alias")
            case .legacy: counts.add("delivered_legacy")
            }
        } else {
            counts.add("already_delivered")
        }
    }

    // MARK: Fragments

    private func handleFragment(_ packet: BitchatPacket, counts: inout Counts) throws {
        guard let fragment = try? Fragment.decode(packet.payload) else { counts.add("malformed"); return }
        // A fragment of a fragment is refused before anything is stored: reassembly never nests.
        guard fragment.originalType != BitchatPacket.MessageType.fragment.rawValue else { counts.add("rejected_nested"); return }
        switch try Reassembly(database: node.database).add(fragment, senderID: packet.senderID, now: node.now) {
        case .stored(let replaced, let evicted):
            counts.add("fragment_stored")
            if replaced { counts.add("fragment_replaced") }
            if evicted { counts.add("fragment_set_evicted") }
        case .mismatched:
            counts.add("fragment_mismatched")
        case .rejected:
            counts.add("fragment_rejected")
        case .complete(let bytes, let evicted):
            if evicted { counts.add("fragment_set_evicted") }
            counts.add("reassembled")
            guard let inner = try? BitchatPacket.decode(bytes), inner.senderID == packet.senderID else { counts.add("malformed"); return }
            // The reassembled packet is what its fragments declared, so never itself a fragment: one level only.
            guard inner.type == fragment.originalType else { counts.add("malformed"); return }
            try handle(inner, wire: nil, counts: &counts)
        }
    }
}
