import COpenSSL
import CShims

/// A NIST P-256 private key for ES256 (ECDSA over SHA-256), such as an APNs `.p8` signing key.
package struct P256PrivateKey: Sendable {
    private let key: EVPKey
    /// The public half, for verification.
    package let publicKey: P256PublicKey

    /// Loads an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the form of an APNs `.p8` file.
    ///
    /// Throws `CryptoError.malformedInput` for anything that is not such a PEM block and
    /// `CryptoError.invalidKey` for a key that is not on P-256.
    package init(pkcs8PEM pem: String) throws {
        var text = Array(pem.utf8)
        defer { cleanse(&text) }
        let header = Array("-----BEGIN PRIVATE KEY-----".utf8)
        guard let start = text.firstIndex(where: { $0 != 0x20 && $0 != 0x0a && $0 != 0x0d && $0 != 0x09 }),
              text.count - start >= header.count, Array(text[start..<(start + header.count)]) == header else {
            throw CryptoError.malformedInput("expected a PEM PRIVATE KEY (PKCS#8) block")
        }
        guard let bio = text.withNonNullBytes({ bytes, count in BIO_new_mem_buf(bytes, Int32(count)) }) else {
            throw libraryFailure("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        // A password callback that supplies none: an encrypted key fails instead of prompting on a terminal.
        guard let pkey = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
            ERR_clear_error()
            throw CryptoError.malformedInput("the PEM block is not a readable PKCS#8 private key")
        }
        let owned = EVPKey(pkey)
        try Self.requireP256(pkey)
        key = owned
        publicKey = try P256PublicKey(rawRepresentation: Self.uncompressedPublicKey(pkey))
    }

    private init(owning owned: EVPKey) throws {
        try Self.requireP256(owned.pointer)
        key = owned
        publicKey = try P256PublicKey(rawRepresentation: Self.uncompressedPublicKey(owned.pointer))
    }

    /// A fresh random P-256 key.
    package static func generate() throws -> P256PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw libraryFailure("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(context) }
        try requireOpenSSL(EVP_PKEY_keygen_init(context), "EVP_PKEY_keygen_init")
        try requireOpenSSL(EVP_PKEY_CTX_set_group_name(context, "P-256"), "EVP_PKEY_CTX_set_group_name")
        var pkey: OpaquePointer?
        try requireOpenSSL(EVP_PKEY_generate(context, &pkey), "EVP_PKEY_generate")
        guard let generated = pkey else { throw libraryFailure("EVP_PKEY_generate") }
        return try P256PrivateKey(owning: EVPKey(generated))
    }

    /// The key as an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), e.g. for tests and fixtures.
    ///
    /// The result is a `String`, which cannot be wiped: prefer keeping keys sealed in the store.
    package var pkcs8PEM: String {
        get throws {
            guard let bio = BIO_new(BIO_s_mem()) else { throw libraryFailure("BIO_new") }
            defer { BIO_free(bio) }
            // OpenSSL 3 writes PKCS#8 ("PRIVATE KEY") here, unencrypted as no cipher is given.
            try requireOpenSSL(PEM_write_bio_PrivateKey(bio, key.pointer, nil, nil, 0, nil, nil), "PEM_write_bio_PrivateKey")
            var data: UnsafeMutablePointer<CChar>?
            let length = shim_BIO_get_mem_data(bio, &data)
            guard length > 0, let data else { throw libraryFailure("BIO_get_mem_data") }
            var copy = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
            defer { cleanse(&copy) }
            return String(decoding: copy, as: UTF8.self)
        }
    }

    /// ES256: the ECDSA signature of SHA-256(`message`) as 64 bytes r ‖ s (JWS form, not DER).
    ///
    /// OpenSSL 3.0 draws a random nonce, so two signatures of one message differ.
    package func signature(for message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw libraryFailure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        try requireOpenSSL(EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer), "EVP_DigestSignInit")
        // A DER ECDSA-Sig-Value for P-256 is at most 72 bytes.
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        try message.withNonNullBytes { bytes, count in
            try requireOpenSSL(EVP_DigestSign(context, &der, &length, bytes, count), "EVP_DigestSign")
        }
        return try ECDSARaw.fromDER(Array(der[..<length]))
    }

    private static func requireP256(_ pkey: OpaquePointer) throws {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC,
              EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1,
              String(decoding: name[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) == "prime256v1" else {
            ERR_clear_error()
            throw CryptoError.invalidKey("not a P-256 (prime256v1) EC key")
        }
    }

    private static func uncompressedPublicKey(_ pkey: OpaquePointer) throws -> [UInt8] {
        // A key read from PEM keeps the point format it was stored with; ask for uncompressed.
        _ = EVP_PKEY_set_utf8_string_param(pkey, "point-format", "uncompressed")
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", &point, point.count, &length) == 1,
              length == 65, point[0] == 0x04 else {
            throw libraryFailure("EVP_PKEY_get_octet_string_param(encoded-pub-key)")
        }
        return point
    }
}

/// A NIST P-256 public key for verifying ES256 signatures.
package struct P256PublicKey: Sendable, Equatable {
    /// DER SubjectPublicKeyInfo prefix for an id-ecPublicKey on prime256v1 with a 65-byte point.
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
        0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    private let key: EVPKey
    /// The uncompressed SEC1 point, 65 bytes: 0x04 ‖ X ‖ Y.
    package let rawRepresentation: [UInt8]

    /// The key with uncompressed point `rawRepresentation` (65 bytes); throws unless it lies on P-256.
    package init(rawRepresentation: [UInt8]) throws {
        guard rawRepresentation.count == 65, rawRepresentation[0] == 0x04 else {
            throw CryptoError.invalidKey("a P-256 public key is a 65-byte uncompressed point")
        }
        // Wrap the point in a SubjectPublicKeyInfo and let d2i_PUBKEY decode it (it checks the point is on the curve).
        let der = Self.spkiPrefix + rawRepresentation
        let pkey: OpaquePointer? = der.withNonNullBytes { bytes, count in
            var cursor: UnsafePointer<UInt8>? = bytes
            return d2i_PUBKEY(nil, &cursor, count)
        }
        guard let pkey else {
            ERR_clear_error()
            throw CryptoError.invalidKey("not a point on P-256")
        }
        key = EVPKey(pkey)
        self.rawRepresentation = rawRepresentation
    }

    /// Whether `signature` (64 bytes r ‖ s) is a valid ES256 signature of `message` by this key.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let der = ECDSARaw.toDER(signature), let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { ERR_clear_error(); return false }
        let result = der.withNonNullBytes { sig, sigCount in
            message.withNonNullBytes { bytes, count in EVP_DigestVerify(context, sig, sigCount, bytes, count) }
        }
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    package static func == (a: P256PublicKey, b: P256PublicKey) -> Bool { a.rawRepresentation == b.rawRepresentation }
}

/// Conversion between DER ECDSA-Sig-Value and the fixed-width r ‖ s form JWS uses (P-256: 32 + 32 bytes;
/// P-384: 48 + 48 bytes, with `width` 48).
enum ECDSARaw {
    static func fromDER(_ der: [UInt8], width: Int = 32) throws -> [UInt8] {
        let sig: OpaquePointer? = der.withNonNullBytes { bytes, count in
            var cursor: UnsafePointer<UInt8>? = bytes
            return d2i_ECDSA_SIG(nil, &cursor, count)
        }
        guard let sig else { throw libraryFailure("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(sig) }
        var raw = [UInt8](repeating: 0, count: 2 * width)
        // r and s are < n < 2^(8·width), so they always fit in `width` bytes; bn2binpad returns -1 otherwise.
        let ok = raw.withUnsafeMutableBufferPointer { out in
            BN_bn2binpad(ECDSA_SIG_get0_r(sig), out.baseAddress, Int32(width)) == Int32(width) &&
                BN_bn2binpad(ECDSA_SIG_get0_s(sig), out.baseAddress! + width, Int32(width)) == Int32(width)
        }
        guard ok else { throw libraryFailure("BN_bn2binpad") }
        return raw
    }

    /// DER for a `2 · width`-byte r ‖ s, or nil if it is not that long. (Range checks are left to verification.)
    static func toDER(_ raw: [UInt8], width: Int = 32) -> [UInt8]? {
        guard raw.count == 2 * width, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32(width), nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + width, Int32(width), nil) }
        // ECDSA_SIG_set0 takes ownership of r and s only when it succeeds.
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = out.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        return written == length ? der : nil
    }
}
