import Cryptography

/// What the node knows about one peer's identity: its Noise static key, the signing key the peer itself bound to
/// that key inside a Noise session, and the signed announces that claimed a signing key for it.
///
/// The binding rule (docs/protocols/mesh-wire.md, "Peer identity"):
/// - A signing key is bound to a Noise static key **authoritatively** only by the peer itself, in the
///   authenticated peer state (0x21) of a Noise session that proved that static key. A later 0x21 from a session
///   proving the same static key may rebind it (the peer reinstalled its signing key); nothing else can.
/// - A verified announce (signed by the key it announces, sent from the peer id of the Noise key it announces) is
///   only a **claim**. Claims never replace or evict a bound key; a claim for a different key is kept (bounded)
///   so the conflict shows in `job mesh peers`.
/// - With no bound key, one claimed key is **provisional**: legacy files signed by it are accepted. Two claims
///   with different keys are a **conflict**: legacy files under either key are refused until a session binds one.
struct PeerRecord: Equatable {
    /// One verified announce's content, per claimed signing key.
    struct Claim: Equatable {
        var signingKey: [UInt8]
        var nickname: String
        /// nil when the announce had no capabilities TLV.
        var capabilities: Capabilities?
        var announcedAt: Int64
    }

    enum Standing: String {
        /// The signing key was bound by the peer inside a Noise session.
        case authenticated
        /// One announce claim, no session binding yet.
        case provisional
        /// Announces claim different signing keys and no session has bound one.
        case conflict
    }

    /// Claims kept per peer: the first ones and the latest conflicting one.
    static let maxClaims = 4

    var peerID: [UInt8]
    var noiseKey: [UInt8]
    /// Bound by the peer's own 0x21 in a session that proved `noiseKey`.
    var boundSigningKey: [UInt8]?
    var claims: [Claim]

    init(peerID: [UInt8], noiseKey: [UInt8], boundSigningKey: [UInt8]? = nil, claims: [Claim] = []) {
        self.peerID = peerID
        self.noiseKey = noiseKey
        self.boundSigningKey = boundSigningKey
        self.claims = claims
    }

    var fingerprint: [UInt8] { NodeIdentity.fingerprint(noiseKey: noiseKey) }

    var standing: Standing {
        if boundSigningKey != nil { return .authenticated }
        return claims.count <= 1 ? .provisional : .conflict
    }

    /// The signing key legacy files from this peer must verify under: the bound key, else the one provisional
    /// claim; nil in a conflict (and for a record without either, which does not occur).
    var signingKey: [UInt8]? {
        if let boundSigningKey { return boundSigningKey }
        return claims.count == 1 ? claims[0].signingKey : nil
    }

    /// The announce in force: the claim made with the signing key in force; nil in a conflict, or when the bound
    /// key has not announced yet.
    var announcement: Claim? {
        guard let key = signingKey else { return nil }
        return claim(for: key)
    }

    /// Claims made with a signing key other than the one in force (all of them in a conflict).
    var conflictingClaims: [Claim] {
        guard let key = signingKey else { return claims }
        return claims.filter { !ConstantTime.equals($0.signingKey, key) }
    }

    func claim(for signingKey: [UInt8]) -> Claim? { claims.first { ConstantTime.equals($0.signingKey, signingKey) } }

    /// A verified announce gave the peer a stable Noise key (whatever the state of its signing key).
    var hasStableKey: Bool { !claims.isEmpty }
    var capabilities: Capabilities? { announcement?.capabilities }
    var nickname: String? { announcement?.nickname }
    var advertisesPrivateMedia: Bool { capabilities?.contains(.privateMedia) == true }

    /// Records a verified announce claim; false when an equal or newer announce with that key was already seen.
    mutating func addClaim(_ claim: Claim) -> Bool {
        if let index = claims.firstIndex(where: { ConstantTime.equals($0.signingKey, claim.signingKey) }) {
            guard claim.announcedAt >= claims[index].announcedAt else { return false }
            claims[index] = claim
            return true
        }
        if claims.count >= Self.maxClaims {
            // Bounded: the newest conflicting claim replaces the previous newest; the first claims stay, and a
            // claim made with the bound key is never the one replaced.
            let replaceable = claims.indices.last { index in
                boundSigningKey.map { !ConstantTime.equals(claims[index].signingKey, $0) } ?? true
            }
            guard let replaceable else { return false }
            claims[replaceable] = claim
            return true
        }
        claims.append(claim)
        return true
    }

    // MARK: Persistence (sealed by the registry)

    func serialized() -> [UInt8] {
        var out: [UInt8] = [2] + peerID + noiseKey
        if let boundSigningKey { out += [1] + boundSigningKey } else { out.append(0) }
        out.append(UInt8(claims.count))
        for claim in claims {
            out += claim.signingKey
            out.append(claim.capabilities == nil ? 0 : 1)
            out.appendBigEndian(claim.capabilities?.rawValue ?? 0)
            out.appendBigEndian(UInt64(bitPattern: claim.announcedAt))
            let name = Array(claim.nickname.utf8.prefix(255))
            out.append(UInt8(name.count))
            out += name
        }
        return out
    }

    init(serialized bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        let version = try reader.byte()
        peerID = Array(try reader.take(8))
        noiseKey = Array(try reader.take(32))
        func capabilities(_ reader: inout ByteReader) throws -> Capabilities? {
            let present = try reader.byte()
            let raw = try reader.uint64()
            guard present <= 1, present == 1 || raw == 0 else { throw WireError.nonCanonical }
            return present == 1 ? Capabilities(rawValue: raw) : nil
        }
        switch version {
        case 1:
            // Before the binding rule: one announce, whose key is now only a provisional claim.
            let key = Array(try reader.take(32))
            let caps = try capabilities(&reader)
            let at = Int64(bitPattern: try reader.uint64())
            boundSigningKey = nil
            claims = [Claim(signingKey: key, nickname: String(decoding: reader.rest(), as: UTF8.self), capabilities: caps, announcedAt: at)]
        case 2:
            switch try reader.byte() {
            case 0: boundSigningKey = nil
            case 1: boundSigningKey = Array(try reader.take(32))
            default: throw WireError.nonCanonical
            }
            let count = Int(try reader.byte())
            guard count <= Self.maxClaims else { throw WireError.nonCanonical }
            claims = try (0..<count).map { _ in
                let key = Array(try reader.take(32))
                let caps = try capabilities(&reader)
                let at = Int64(bitPattern: try reader.uint64())
                let name = String(decoding: try reader.take(Int(try reader.byte())), as: UTF8.self)
                return Claim(signingKey: key, nickname: name, capabilities: caps, announcedAt: at)
            }
            guard reader.isAtEnd else { throw WireError.nonCanonical }
        default:
            throw WireError.unsupportedVersion
        }
    }
}
