import Cryptography

/// The grant challenge–response (docs/protocols/grants-and-link.md §3.2):
/// `HMAC-SHA256(grant_secret, "vnidrop-grant-v1" ‖ challenge ‖ issuer_endpoint_id ‖ holder_endpoint_id)`.
package enum GrantProof {
    /// The domain-separation label (16 ASCII bytes).
    package static let label = Array("vnidrop-grant-v1".utf8)
    /// Length of a challenge, a grant id and a grant secret.
    package static let challengeCount = 32
    package static let grantIDCount = 16
    package static let secretCount = 32

    /// The message the MAC covers.
    package static func message(challenge: [UInt8], issuer: EndpointID, holder: EndpointID) -> [UInt8] {
        label + challenge + issuer.bytes + holder.bytes
    }

    /// The holder's proof for `challenge`.
    package static func prove(secret: SecretBytes, challenge: [UInt8], issuer: EndpointID, holder: EndpointID) -> [UInt8] {
        HMACSHA256.authenticate(key: secret, message: message(challenge: challenge, issuer: issuer, holder: holder))
    }

    /// Whether `proof` is right for `challenge`, compared in constant time.
    package static func isValid(_ proof: [UInt8], secret: SecretBytes, challenge: [UInt8], issuer: EndpointID, holder: EndpointID) -> Bool {
        let expected = prove(secret: secret, challenge: challenge, issuer: issuer, holder: holder)
        // CRYPTO_memcmp over the full 32 bytes; a proof of the wrong length is unequal (the length is not secret).
        return ConstantTime.equals(expected, proof)
    }
}
