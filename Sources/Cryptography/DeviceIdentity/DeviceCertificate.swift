import COpenSSL

/// A Syncthing device certificate as the authenticated trigger reads it: strictly parsed DER, and the public key
/// of its SubjectPublicKeyInfo, which verifies trigger signatures.
///
/// Only the public key is used: the certificate's own signature, names and validity do not matter, because the
/// relay trusts a certificate for exactly one reason, that its SHA-256 is the Device ID (docs/protocols/trigger-v2.md,
/// "The certificate"). Three keys are accepted, each with one signature scheme:
///
/// | key | signature | signature bytes |
/// |---|---|---|
/// | EC P-384 (current Syncthing) | ECDSA with SHA-384 | 96: r ‖ s, 48 bytes each, big-endian |
/// | EC P-256 | ECDSA with SHA-256 | 64: r ‖ s, 32 bytes each |
/// | RSA, 2048 to 4096 bits | RSASSA-PKCS1-v1_5 with SHA-256 | the modulus length |
package struct DeviceCertificate: Sendable {
    /// The key of a device certificate, which fixes the signature scheme (there is no algorithm field to confuse).
    package enum KeyType: String, Sendable, CaseIterable {
        case ecdsaP384 = "ecdsa-p384-sha384"
        case ecdsaP256 = "ecdsa-p256-sha256"
        case rsaPKCS1 = "rsa-pkcs1v15-sha256"
    }

    /// The largest certificate accepted, in DER bytes (Syncthing's are about 550 bytes, RSA-4096 ones under 1,500).
    package static let maximumDERCount = 4096
    /// RSA moduli outside this range (bits) are refused: smaller ones are weak, larger ones cost verification time.
    package static let rsaBits = 2048...4096

    static let p384Algorithm: [UInt8] = [0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                                         0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22]
    static let p256Algorithm: [UInt8] = [0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
                                         0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
    static let rsaAlgorithm: [UInt8] = [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00]

    /// The key's type, which names the signature scheme.
    package let keyType: KeyType
    /// How many bytes a signature by this key has.
    package let signatureCount: Int
    /// The DER SubjectPublicKeyInfo, as it appears in the certificate.
    package let subjectPublicKeyInfo: [UInt8]
    private let key: EVPKey

    /// Parses `der` strictly: one Certificate SEQUENCE and nothing after it, a TBSCertificate whose elements are
    /// in X.509's order, and a SubjectPublicKeyInfo that is exactly one of the three accepted keys.
    ///
    /// Throws `CryptoError.malformedInput` for a structure that is not such a certificate (or is over
    /// `maximumDERCount`), `CryptoError.invalidKey` for a key of another kind or size, or not on its curve.
    package init(der: [UInt8]) throws {
        guard der.count <= Self.maximumDERCount else { throw CryptoError.malformedInput("the certificate is over the size cap") }
        let spki = try Self.subjectPublicKeyInfo(der)
        var reader = StrictDER(spki.contents)
        let algorithm = Array(try reader.read(0x30).encoded)
        let bitString = try reader.read(0x03).contents
        guard reader.atEnd else { throw CryptoError.malformedInput("the SubjectPublicKeyInfo has trailing elements") }
        let type: KeyType
        switch algorithm {
        case Self.p384Algorithm:
            guard bitString.count == 98, bitString.first == 0, bitString.dropFirst().first == 0x04 else {
                throw CryptoError.invalidKey("a P-384 key is an uncompressed 97-byte point")
            }
            type = .ecdsaP384
        case Self.p256Algorithm:
            guard bitString.count == 66, bitString.first == 0, bitString.dropFirst().first == 0x04 else {
                throw CryptoError.invalidKey("a P-256 key is an uncompressed 65-byte point")
            }
            type = .ecdsaP256
        case Self.rsaAlgorithm:
            guard bitString.first == 0 else { throw CryptoError.malformedInput("the RSA key's BIT STRING has unused bits") }
            var rsaKey = StrictDER(bitString.dropFirst())
            var numbers = StrictDER(try rsaKey.read(0x30).contents)
            guard rsaKey.atEnd else { throw CryptoError.malformedInput("the RSA key has trailing bytes") }
            for _ in 0..<2 {
                let integer = try numbers.read(0x02).contents
                guard let first = integer.first, first & 0x80 == 0,
                      first != 0 || integer.count > 1 && integer[integer.startIndex + 1] & 0x80 != 0 else {
                    throw CryptoError.malformedInput("an RSA key integer is negative or not minimal")
                }
            }
            guard numbers.atEnd else { throw CryptoError.malformedInput("the RSA key has more than a modulus and an exponent") }
            type = .rsaPKCS1
        default:
            throw CryptoError.invalidKey("the certificate's key is not EC P-384, EC P-256 or RSA")
        }
        let encoded = Array(spki.encoded)
        let pkey: OpaquePointer? = encoded.withNonNullBytes { bytes, count in
            var cursor: UnsafePointer<UInt8>? = bytes
            let key = d2i_PUBKEY(nil, &cursor, count)
            // A key that did not use every byte is refused like any trailing data.
            if let key, cursor != bytes + count {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
        guard let pkey else {
            ERR_clear_error()
            throw CryptoError.invalidKey("the certificate's key does not decode (not on its curve, or a bad RSA key)")
        }
        let owned = EVPKey(pkey)
        let bits = Int(EVP_PKEY_get_bits(pkey))
        switch type {
        case .ecdsaP384: signatureCount = 96
        case .ecdsaP256: signatureCount = 64
        case .rsaPKCS1:
            guard Self.rsaBits.contains(bits) else { throw CryptoError.invalidKey("the RSA key is not 2048 to 4096 bits") }
            signatureCount = (bits + 7) / 8
        }
        guard try Self.encodedPublicKey(pkey) == encoded else {
            throw CryptoError.malformedInput("the SubjectPublicKeyInfo is not in its distinguished encoding")
        }
        keyType = type
        subjectPublicKeyInfo = encoded
        key = owned
    }

    /// Whether `signature` is this key's signature of `message` under the key's one scheme.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard signature.count == signatureCount else { return false }
        let der: [UInt8]
        switch keyType {
        case .ecdsaP384:
            guard let converted = ECDSARaw.toDER(signature, width: 48) else { return false }
            der = converted
        case .ecdsaP256:
            guard let converted = ECDSARaw.toDER(signature, width: 32) else { return false }
            der = converted
        case .rsaPKCS1:
            der = signature
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        // RSA's default padding for EVP_DigestVerify is PKCS#1 v1.5.
        guard EVP_DigestVerifyInit(context, nil, Self.digest(keyType), nil, key.pointer) == 1 else { ERR_clear_error(); return false }
        let result = der.withNonNullBytes { sig, sigCount in
            message.withNonNullBytes { bytes, count in EVP_DigestVerify(context, sig, sigCount, bytes, count) }
        }
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// The hash of a key type's signature scheme.
    static func digest(_ type: KeyType) -> OpaquePointer? {
        type == .ecdsaP384 ? EVP_sha384() : EVP_sha256()
    }

    /// The DER SubjectPublicKeyInfo OpenSSL writes for `pkey`.
    static func encodedPublicKey(_ pkey: OpaquePointer) throws -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        guard length > 0 else { throw libraryFailure("i2d_PUBKEY") }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(pkey, &cursor)
        }
        guard written == length else { throw libraryFailure("i2d_PUBKEY") }
        return out
    }

    /// The SubjectPublicKeyInfo element of a Certificate (X.509 §4.1 order), checking the structure around it.
    private static func subjectPublicKeyInfo(_ der: [UInt8]) throws -> StrictDER.Element {
        var outer = StrictDER(der[...])
        let certificate = try outer.read(0x30)
        guard outer.atEnd else { throw CryptoError.malformedInput("the certificate has trailing bytes") }
        var fields = StrictDER(certificate.contents)
        let tbs = try fields.read(0x30)
        _ = try fields.read(0x30)  // signatureAlgorithm
        _ = try fields.read(0x03)  // signatureValue
        guard fields.atEnd else { throw CryptoError.malformedInput("the certificate has more than three elements") }
        var tbsFields = StrictDER(tbs.contents)
        if tbsFields.nextTag == 0xa0 { _ = try tbsFields.readAny() }  // [0] EXPLICIT version
        _ = try tbsFields.read(0x02)  // serialNumber
        for _ in 0..<4 { _ = try tbsFields.read(0x30) }  // signature, issuer, validity, subject
        let spki = try tbsFields.read(0x30)
        // After the key only issuerUniqueID [1], subjectUniqueID [2] and extensions [3] may follow, in that order.
        var allowed: [UInt8] = [0x81, 0xa1, 0x82, 0xa2, 0xa3]
        while !tbsFields.atEnd {
            let element = try tbsFields.readAny()
            guard let position = allowed.firstIndex(of: element.tag) else {
                throw CryptoError.malformedInput("the TBSCertificate has an unexpected element after its key")
            }
            allowed.removeFirst(position + 1)
        }
        return spki
    }
}
