import COpenSSL

/// An Ed25519 private key (RFC 8032) held by OpenSSL, for signing and for TLS certificates.
package struct Ed25519PrivateKey: Sendable {
    /// Length of a seed (the RFC 8032 private key) in bytes.
    package static let seedCount = 32

    private let key: EVPKey
    private let seedBytes: SecretBytes
    /// The 32-byte public key.
    package let publicKey: [UInt8]

    /// The key whose RFC 8032 private key (seed) is `seed`, which must be 32 bytes.
    package init(seed: SecretBytes) throws {
        guard seed.count == Self.seedCount else { throw CryptoError.invalidKey("an Ed25519 seed is 32 bytes") }
        guard let pkey = seed.withNonNullBytes({ bytes, count in
            EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, bytes, count)
        }) else { throw libraryFailure("EVP_PKEY_new_raw_private_key") }
        key = EVPKey(pkey)
        seedBytes = seed
        var publicBytes = [UInt8](repeating: 0, count: 32)
        var length = 32
        try requireOpenSSL(EVP_PKEY_get_raw_public_key(pkey, &publicBytes, &length), "EVP_PKEY_get_raw_public_key")
        publicKey = publicBytes
    }

    /// A fresh random key.
    package static func generate() throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seed: SecretBytes.random(count: seedCount))
    }

    /// The 32-byte seed, for sealing into the store.
    package var seed: SecretBytes { seedBytes }

    /// The public half, for verification.
    package var publicKeyValue: Ed25519PublicKey {
        // publicKey is always 32 bytes, which is all the initializer checks.
        try! Ed25519PublicKey(rawRepresentation: publicKey)
    }

    /// The 64-byte Ed25519 signature of `message` (deterministic, per RFC 8032).
    package func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw libraryFailure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        // Ed25519 hashes internally: no digest is given, and only the one-shot EVP_DigestSign is allowed.
        try requireOpenSSL(EVP_DigestSignInit(context, nil, nil, nil, key.pointer), "EVP_DigestSignInit")
        var signature = [UInt8](repeating: 0, count: 64)
        var length = 64
        try message.withNonNullBytes { bytes, count in
            try requireOpenSSL(EVP_DigestSign(context, &signature, &length, bytes, count), "EVP_DigestSign")
        }
        guard length == 64 else { throw CryptoError.library("EVP_DigestSign") }
        return signature
    }

    /// Lends OpenSSL's `EVP_PKEY *` for this key to `body`, for installing it as a TLS private key
    /// (`SSL_CTX_use_PrivateKey`, `X509_sign`). Only for TLS and certificate code.
    ///
    /// The pointer is valid only during `body`. Do not free it; code that keeps it (SSL_CTX_use_PrivateKey
    /// does) must take its own reference with `EVP_PKEY_up_ref`, which those OpenSSL calls do themselves.
    package func withEVPPrivateKey<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(key) { try body(key.pointer) }
    }
}

/// An Ed25519 public key (RFC 8032) for verifying signatures.
package struct Ed25519PublicKey: Sendable {
    private let key: EVPKey
    /// The 32-byte encoded public key.
    package let rawRepresentation: [UInt8]

    /// The key with 32-byte encoding `rawRepresentation`. (An encoding that is not a curve point
    /// is accepted here and then never verifies anything.)
    package init(rawRepresentation: [UInt8]) throws {
        guard rawRepresentation.count == 32 else { throw CryptoError.invalidKey("an Ed25519 public key is 32 bytes") }
        guard let pkey = rawRepresentation.withNonNullBytes({ bytes, count in
            EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, bytes, count)
        }) else { throw libraryFailure("EVP_PKEY_new_raw_public_key") }
        key = EVPKey(pkey)
        self.rawRepresentation = rawRepresentation
    }

    /// Whether `signature` is this key's valid Ed25519 signature of `message`.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == 64, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key.pointer) == 1 else { ERR_clear_error(); return false }
        let result = signature.withNonNullBytes { sig, sigCount in
            message.withNonNullBytes { bytes, count in EVP_DigestVerify(context, sig, sigCount, bytes, count) }
        }
        if result != 1 { ERR_clear_error() }
        return result == 1
    }
}
