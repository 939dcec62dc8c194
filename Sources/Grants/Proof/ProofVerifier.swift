import Cryptography

/// What the issuer's store holds about a presented grant id, read before the proof is judged.
package struct IssuedGrantRecord: Sendable {
    package let rowID: Int64
    package let secret: SecretBytes
    /// The endpoint the grant was issued to.
    package let holder: EndpointID
    package let lifetimeMs: Int64?
    /// The idle deadline; nil when the grant never expires.
    package let expiresAt: Int64?
    /// Set when tombstoned: `revoked` by the user, `expired` by the sweep.
    package let revokeReason: String?

    package init(rowID: Int64, secret: SecretBytes, holder: EndpointID, lifetimeMs: Int64?, expiresAt: Int64?, revokeReason: String?) {
        self.rowID = rowID
        self.secret = secret
        self.holder = holder
        self.lifetimeMs = lifetimeMs
        self.expiresAt = expiresAt
        self.revokeReason = revokeReason
    }
}

/// Judges a grant proof, purely: the checks run in the fixed order blocked → unknown → wrong endpoint → revoked →
/// expired → MAC (reference `grants.md`), and the MAC is compared in constant time. The endpoint check comes before
/// `revoked`, so only the grant's own holder (authenticated by the transport) ever learns that it was revoked; a
/// stranger who learnt a grant id gets `lapsed`.
package enum ProofVerifier {
    /// A stand-in key, so refusals before the MAC step still spend one HMAC and answer in about the same time.
    private static let decoyKey = SecretBytes([UInt8](repeating: 0x5a, count: 32))

    /// Returns nil when the proof is accepted, else why it was refused.
    /// - Parameters:
    ///   - remoteIsBlocked: the connection's remote endpoint is on the block list.
    ///   - record: the issued grant under the presented id, if any.
    ///   - issuer: this node's endpoint id; `remote`: the connection's authenticated remote endpoint id.
    package static func judge(remoteIsBlocked: Bool, record: IssuedGrantRecord?, issuer: EndpointID, remote: EndpointID,
                             challenge: [UInt8], proof: [UInt8], now: Int64) -> ProofRefusal? {
        let refusal: ProofRefusal?
        if remoteIsBlocked { refusal = .blocked }
        else if let record {
            if !ConstantTime.equals(record.holder.bytes, remote.bytes) { refusal = .wrongEndpoint }
            else if record.revokeReason == "revoked" { refusal = .revoked }
            else if record.revokeReason != nil { refusal = .expired }
            else if let deadline = record.expiresAt, deadline <= now { refusal = .expired }
            else {
                let valid = GrantProof.isValid(proof, secret: record.secret, challenge: challenge, issuer: issuer, holder: remote)
                return valid ? nil : .badProof
            }
        } else { refusal = .unknown }
        // Every refusal above skipped the MAC; spend one anyway so timing does not tell the cases apart.
        _ = GrantProof.isValid(proof, secret: decoyKey, challenge: challenge, issuer: issuer, holder: remote)
        return refusal
    }
}
