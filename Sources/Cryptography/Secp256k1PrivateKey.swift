import CSecp256k1

/// A secp256k1 private key for ES256K (ECDSA over SHA-256, as did-jwt signs), backed by libsecp256k1.
///
/// Signatures are deterministic (RFC 6979 nonces), low-S, and serialized as 64 bytes r ‖ s.
package struct Secp256k1PrivateKey: Sendable {
    /// Length of a private key in bytes.
    package static let keyCount = 32

    private let secret: SecretBytes
    private let compressedPublicKey: [UInt8]
    private let uncompressedPublicKey: [UInt8]

    /// Takes a 32-byte big-endian scalar; throws `CryptoError.invalidKey` unless it is in 1..<n.
    package init(rawRepresentation: SecretBytes) throws {
        guard rawRepresentation.count == Self.keyCount else { throw CryptoError.invalidKey("a secp256k1 private key is 32 bytes") }
        let context = Secp256k1SigningContext.shared.pointer
        var publicKey = secp256k1_pubkey()
        let valid = rawRepresentation.withNonNullBytes { key, _ in
            secp256k1_ec_seckey_verify(context, key) == 1 && secp256k1_ec_pubkey_create(context, &publicKey, key) == 1
        }
        guard valid else { throw CryptoError.invalidKey("not a valid secp256k1 scalar") }
        secret = rawRepresentation
        compressedPublicKey = Self.serialize(publicKey, compressed: true)
        uncompressedPublicKey = Self.serialize(publicKey, compressed: false)
    }

    /// A fresh random key.
    package static func generate() throws -> Secp256k1PrivateKey {
        // A random 32-byte string is out of range with probability ~2^-128; draw again if so.
        // A failing random source throws out of the loop rather than spinning.
        while true {
            let candidate = try SecretBytes.random(count: keyCount)
            if let key = try? Secp256k1PrivateKey(rawRepresentation: candidate) { return key }
        }
    }

    /// The 32-byte scalar, for sealing into the store.
    package var rawRepresentation: SecretBytes { secret }

    /// The SEC1 public key: 33 bytes (`02`/`03` ‖ X) when `compressed`, else 65 bytes (`04` ‖ X ‖ Y).
    package func publicKey(compressed: Bool) -> [UInt8] {
        compressed ? compressedPublicKey : uncompressedPublicKey
    }

    /// Signs a 32-byte digest: 64-byte r ‖ s with an RFC 6979 nonce and low S.
    package func signature(forDigest digest: [UInt8]) throws -> [UInt8] {
        guard digest.count == 32 else { throw CryptoError.malformedInput("an ECDSA digest is 32 bytes") }
        let context = Secp256k1SigningContext.shared.pointer
        var signature = secp256k1_ecdsa_signature()
        let signed = secret.withNonNullBytes { key, _ in
            // NULL nonce function = secp256k1_nonce_function_default, which is RFC 6979 (HMAC-SHA256).
            secp256k1_ecdsa_sign(context, &signature, digest, key, nil, nil)
        }
        guard signed == 1 else { throw CryptoError.library("secp256k1_ecdsa_sign") }
        // libsecp256k1 already emits low-S; normalizing is a no-op kept as a guarantee.
        var normalized = secp256k1_ecdsa_signature()
        _ = secp256k1_ecdsa_signature_normalize(secp256k1StaticContext, &normalized, &signature)
        var compact = [UInt8](repeating: 0, count: 64)
        _ = secp256k1_ecdsa_signature_serialize_compact(secp256k1StaticContext, &compact, &normalized)
        return compact
    }

    /// ES256K: signs SHA-256(`message`), as did-jwt's `ES256KSigner` does.
    package func signature(for message: [UInt8]) throws -> [UInt8] {
        try signature(forDigest: SHA256.hash(message))
    }

    private static func serialize(_ key: secp256k1_pubkey, compressed: Bool) -> [UInt8] {
        var key = key
        var output = [UInt8](repeating: 0, count: compressed ? 33 : 65)
        var length = output.count
        // SECP256K1_EC_COMPRESSED = TYPE_COMPRESSION | BIT_COMPRESSION; UNCOMPRESSED = TYPE_COMPRESSION.
        let flags = compressed ? UInt32(SECP256K1_FLAGS_TYPE_COMPRESSION | SECP256K1_FLAGS_BIT_COMPRESSION) : UInt32(SECP256K1_FLAGS_TYPE_COMPRESSION)
        _ = secp256k1_ec_pubkey_serialize(secp256k1StaticContext, &output, &length, &key, flags)
        return output
    }
}
