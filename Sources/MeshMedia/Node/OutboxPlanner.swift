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
/// Consent belongs to one send: it is read here and cleared when the send is finished, whatever the outcome;
/// the sealed file content is erased at the same time.
struct OutboxPlanner {
    let node: MeshNode
    /// How long a send waits for the peer's 0x21 after it started waiting.
    let proofTimeoutMilliseconds: Int64

    enum Outcome: String {
        /// Handed to the radio (the outbox); nothing is known yet about delivery.
        case transmittedEncrypted = "transmitted_encrypted"
        case transmittedLegacy = "transmitted_legacy"
        case waiting = "waiting"
        case failed = "failed"
    }

    /// Plans send `id` inside the caller's write transaction.
    func plan(sendID: Int64) throws -> Outcome {
        guard let row = try node.database.queryOne("SELECT sealed, consent, status, waiting_at FROM mesh_sends WHERE id = ?", [sendID]),
              let sealed = try row.get(0, as: [UInt8]?.self) else { return .failed }
        let queued = try QueuedFile(serialized: try node.keyring.open(sealed, purpose: QueuedFile.purpose).copyBytes())
        let consent = try row.get(1, as: Bool.self)
        let waitingSince = try row.get(3, as: Int64?.self)

        let record = try node.registry.record(for: queued.peerID)
        let pinned = try record.map { try node.registry.isPinned(fingerprint: $0.fingerprint) } ?? false
        let session = try node.sessions.load(queued.peerID)
        let established = session?.transport != nil
        // Conflicting announce claims leave the peer's capabilities unknown: wait for a session, which settles them.
        let decision = SendDecision.decide(.init(
            hasStableKey: record?.hasStableKey == true, pinned: pinned,
            announceHasPrivateMedia: record?.advertisesPrivateMedia == true || record?.standing == .conflict,
            proof: established ? session?.proof?.capabilities : nil,
            proofTimedOut: waitingSince.map { node.now - $0 >= proofTimeoutMilliseconds } ?? false,
            consent: consent, canEncrypt: node.identity.emulation != .olderClient))

        switch decision {
        case .wait:
            if waitingSince == nil {
                _ = try node.database.execute("UPDATE mesh_sends SET status = 'waiting', reason = ?, waiting_at = ?, updated_at = ? WHERE id = ?",
                                              [SendReason.awaitingProof.rawValue, node.now, node.now, sendID])
            }
            // Start a handshake unless one is running or the session is up with its proof in flight; restart one
            // that has produced no proof within the timeout (the peer lost its half, or a message was lost).
            if session?.needsHandshake(now: node.now, timeout: proofTimeoutMilliseconds) ?? true { try node.startHandshake(with: queued.peerID) }
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
            let packet = node.directed(.noiseEncrypted, to: queued.peerID, payload: ciphertext, route: queued.route)
            guard let fragments = try admit(packet, sendID: sendID) else { return .failed }
            session.established = transport
            try node.sessions.save(session, now: node.now)
            try node.transmit(packet, sendID: sendID)
            try finish(sendID, status: "transmitted", form: "encrypted", reason: nil, fragments: fragments)
            return .transmittedEncrypted
        case .legacy:
            let packet = try node.signed(node.directed(.fileTransfer, to: queued.peerID, payload: try queued.filePacket.encoded(),
                                                       route: queued.route))
            guard let fragments = try admit(packet, sendID: sendID) else { return .failed }
            try node.transmit(packet, sendID: sendID)
            try finish(sendID, status: "transmitted", form: "legacy", reason: nil, fragments: fragments)
            return .transmittedLegacy
        }
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

    private func finish(_ sendID: Int64, status: String, form: String?, reason: SendReason?, fragments: Int?) throws {
        _ = try node.database.execute("""
            UPDATE mesh_sends SET status = ?, form = ?, reason = ?, fragments = ?, consent = 0, sealed = NULL, updated_at = ?
            WHERE id = ?
            """, [status, form, reason?.rawValue, fragments, node.now, sendID])
    }
}
