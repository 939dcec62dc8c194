import Cryptography
import Runner
import Store

/// What `media-outbox` does with one queued send: decide the form (`SendDecision`), run the route-aware
/// fragment planner on the exact packet, and emit its frames — or fail the send visibly and emit nothing.
///
/// A send's status says no more than is known: `queued`, `waiting` (for the peer's proof), `transmitted` (its
/// frames are in the outbox, i.e. handed to the radio), `carried` (set by `mesh exchange` once every frame
/// reached at least one neighbour), `failed`. There is no `delivered`: the mesh gives no receipt.
///
/// The proof timeout is counted on a live link, across passes: a send times out only when the timeout has passed
/// since it began waiting *and* the session with the peer made no progress (no handshake step, no new session, no
/// proof) over `stallPasses` consecutive passes. A handshake spanning once-a-minute passes is progress, so a
/// consented send does not fall back to the unencrypted form while it is under way.
///
/// Consent belongs to one send: it is read here and cleared when the send is finished, whatever the outcome;
/// the sealed file content is erased when the send is transmitted (a failed send keeps it sealed for a retry).
struct OutboxPlanner {
    let node: MeshNode
    /// How long a send waits for the peer's 0x21 after it started waiting.
    let proofTimeoutMilliseconds: Int64
    /// Passes without progress before the proof timeout may apply: the peer's answer to a message sent in one pass
    /// arrives after the next pass at the earliest.
    static let stallPasses = 2

    enum Outcome: String {
        /// Handed to the radio (the outbox); nothing is known yet about delivery.
        case transmittedEncrypted = "transmitted_encrypted"
        case transmittedLegacy = "transmitted_legacy"
        case waiting = "waiting"
        case failed = "failed"
    }

    /// Plans send `id` inside the caller's write transaction.
    func plan(sendID: Int64) throws -> Outcome {
        guard let row = try node.database.queryOne("SELECT sealed, consent, status, waiting_at, proof_token, proof_stalled_passes FROM mesh_sends WHERE id = ?", [sendID]),
              let sealed = try row.get(0, as: [UInt8]?.self) else { return .failed }
        let queued = try QueuedFile(serialized: try node.keyring.open(sealed, purpose: QueuedFile.purpose).copyBytes())
        let consent = try row.get(1, as: Bool.self)
        let waitingSince = try row.get(3, as: Int64?.self)

        let record = try node.registry.record(for: queued.peerID)
        let pinned = try record.map { try node.registry.isPinned(fingerprint: $0.fingerprint) } ?? false
        let session = try node.sessions.load(queued.peerID)
        let established = session?.transport != nil
        // Progress across passes: the session state this pass sees against the one the last pass saw.
        let token = Self.progressToken(session)
        let lastToken = try row.get(4, as: [UInt8]?.self)
        let lastStalled = try row.get(5, as: Int.self)
        let stalled = waitingSince == nil || lastToken != token ? 0 : lastStalled + 1
        let timedOut = waitingSince.map { node.now - $0 >= proofTimeoutMilliseconds } ?? false
        // Conflicting announce claims leave the peer's capabilities unknown: wait for a session, which settles them.
        let decision = SendDecision.decide(.init(
            hasStableKey: record?.hasStableKey == true, pinned: pinned,
            announceHasPrivateMedia: record?.advertisesPrivateMedia == true || record?.standing == .conflict,
            proof: established ? session?.proof?.capabilities : nil,
            proofTimedOut: timedOut && stalled >= Self.stallPasses,
            consent: consent, canEncrypt: node.identity.emulation != .olderClient))

        switch decision {
        case .wait:
            // Start a handshake unless one is running or the session is up with its proof in flight; restart one
            // that has produced no proof within the timeout and has stalled (the peer lost its half, or a message
            // was lost) — never one still making progress across passes.
            let restart = session.map { $0.needsHandshake(now: node.now, timeout: proofTimeoutMilliseconds) && (waitingSince == nil || stalled >= Self.stallPasses) } ?? true
            if restart { try node.startHandshake(with: queued.peerID) }
            let seen = restart ? Self.progressToken(try node.sessions.load(queued.peerID)) : token
            _ = try node.database.execute("""
                UPDATE mesh_sends SET status = 'waiting', reason = ?, waiting_at = coalesce(waiting_at, ?), updated_at = ?,
                       proof_token = ?, proof_stalled_passes = ? WHERE id = ?
                """, [SendReason.awaitingProof.rawValue, node.now, node.now, seen, restart ? 0 : stalled, sendID])
            return .waiting
        case .blocked(let reason):
            try finish(sendID, status: "failed", form: nil, reason: SendReason(rawValue: reason.rawValue), fragments: nil)
            return .failed
        case .encrypted:
            guard var session, var transport = session.established else { return .failed }
            var plaintext = NoisePayload(kind: .privateFile, body: try queued.filePacket.encoded()).encoded()
            // Emulation of a prerelease iOS sender only: the 0x09 alias. The node itself never emits it.
            if node.identity.emulation == .prereleaseIOS { plaintext[0] = NoisePayload.privateFileAlias }
            let ciphertext = try transport.encrypt(plaintext)
            let packet = node.directed(.noiseEncrypted, to: queued.peerID, payload: ciphertext, route: queued.route, privateMedia: true)
            guard let fragments = try admit(packet, sendID: sendID) else { return .failed }
            session.established = transport
            try node.sessions.save(session, now: node.now)
            try node.transmit(packet, sendID: sendID)
            try finish(sendID, status: "transmitted", form: "encrypted", reason: nil, fragments: fragments)
            return .transmittedEncrypted
        case .legacy:
            let packet = try node.signed(node.directed(.fileTransfer, to: queued.peerID, payload: try queued.filePacket.encoded(),
                                                       route: queued.route, privateMedia: true))
            guard let fragments = try admit(packet, sendID: sendID) else { return .failed }
            try node.transmit(packet, sendID: sendID)
            try finish(sendID, status: "transmitted", form: "legacy", reason: nil, fragments: fragments)
            return .transmittedLegacy
        }
    }

    /// A digest of what the peer has done in the session (handshake step, session start, proof), not of this node's
    /// own restarts' timing: equal tokens in two passes mean no progress between them.
    static func progressToken(_ session: PeerSession?) -> [UInt8] {
        guard let session else { return [0] }
        let pending = session.pending.map { "\($0.role)-\($0.messageIndex)" } ?? "none"
        let text = "\(pending)|\(session.established != nil)|\(session.startedAt)|\(session.proof != nil)"
        return Array(SHA256.hash(Array(text.utf8)).prefix(8))
    }

    /// The fragment plan for the exact packet; nil (and the send failed) when it exceeds 256 fragments.
    private func admit(_ packet: BitchatPacket, sendID: Int64) throws -> Int? {
        let encoded = try packet.encoded()
        let hops = packet.version >= 2 ? packet.route.count : 0
        let fragments = FragmentPlanner.fragmentCount(encodedCount: encoded.count, routeHops: hops)
        guard fragments <= FragmentPlanner.maxPrivateMediaFragments else {
            try finish(sendID, status: "failed", form: nil, reason: .tooManyFragments, fragments: fragments)
            return nil
        }
        return fragments
    }

    /// Finishes a send: its consent is cleared; its sealed content is erased once transmitted, and kept (sealed)
    /// after a failure so `mesh sends retry` can queue it again (`mesh sends cancel` or panic wipe erase it).
    private func finish(_ sendID: Int64, status: String, form: String?, reason: SendReason?, fragments: Int?) throws {
        _ = try node.database.execute("""
            UPDATE mesh_sends SET status = ?, form = ?, reason = ?, fragments = ?, consent = 0,
                   sealed = CASE WHEN ? = 'failed' THEN sealed END, updated_at = ?
            WHERE id = ?
            """, [status, form, reason?.rawValue, fragments, status, node.now, sendID])
    }
}
