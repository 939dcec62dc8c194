/// A JWS signing algorithm bound to its key: the `alg` name plus a function from signing input to signature.
package struct JWTSigner: Sendable {
    /// The JWS `alg` this signer produces, e.g. `ES256K`.
    package let algorithm: String
    private let signFunction: @Sendable ([UInt8]) throws -> [UInt8]

    /// Signs a JWS signing input (`base64url(header) "." base64url(payload)`).
    package func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        try signFunction(signingInput)
    }

    /// ES256K as did-jwt writes it: secp256k1 ECDSA over SHA-256, RFC 6979 nonce, low S, 64-byte r ‖ s.
    package static func es256k(_ key: Secp256k1PrivateKey) -> JWTSigner {
        JWTSigner(algorithm: "ES256K", signFunction: { try key.signature(for: $0) })
    }

    /// ES256: P-256 ECDSA over SHA-256, 64-byte r ‖ s (as APNs provider tokens need).
    package static func es256(_ key: P256PrivateKey) -> JWTSigner {
        JWTSigner(algorithm: "ES256", signFunction: { try key.signature(for: $0) })
    }
}
