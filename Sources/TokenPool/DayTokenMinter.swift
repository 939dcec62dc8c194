import Cryptography

/// Signs pool tokens with one decrypted identity key, the way did-jwt's `createJWT` does.
///
/// The key is opened once per mint pass and this minter is reused for every token (docs/protocols/jwt-pool.md §5: decrypting per
/// token would multiply the cost). Signing is ES256K: secp256k1 ECDSA over SHA-256 of the signing input,
/// RFC 6979 nonce, low S, 64-byte r ‖ s, base64url — deterministic, so equal payloads would give equal
/// tokens; the differing day windows are what keep the pool's tokens distinct.
package struct DayTokenMinter {
    private let key: Secp256k1PrivateKey
    /// The minting DID, `did:ethr:0x` + EIP-55 address of `key`.
    package let issuer: String

    package init(key: Secp256k1PrivateKey) {
        self.key = key
        issuer = DIDEthr.did(for: key)
    }

    /// A compact JWS over exactly `headerJSON` and `payloadJSON`: the one signing path every pool token takes.
    package func sign(headerJSON: [UInt8], payloadJSON: [UInt8]) throws -> String {
        try JWT.encode(headerJSON: headerJSON, payloadJSON: payloadJSON, sign: { try key.signature(for: $0) })
    }

    /// The token granting `window.day`, issued at `issuedAt` (Unix seconds).
    package func token(for window: DayWindow, issuedAt: Int64) throws -> String {
        try sign(headerJSON: DayTokenClaims.headerJSON,
                 payloadJSON: DayTokenClaims.payloadJSON(issuedAt: issuedAt, window: window, issuer: issuer))
    }
}
