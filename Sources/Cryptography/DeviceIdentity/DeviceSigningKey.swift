import COpenSSL

/// A Syncthing device's own key and certificate (`key.pem`, `cert.pem` beside its `config.xml`), which sign the
/// helper's authenticated triggers (docs/protocols/trigger-v2.md).
package struct DeviceSigningKey: Sendable {
    /// The certificate's DER bytes, sent with each trigger.
    package let certificateDER: [UInt8]
    /// The parsed certificate (its key type fixes the signature scheme).
    package let certificate: DeviceCertificate
    /// The Device ID the certificate hashes to.
    package let deviceID: String
    private let key: EVPKey

    /// Loads a PEM certificate and its unencrypted PEM private key (SEC1 `EC PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY`
    /// or PKCS#8 `PRIVATE KEY`).
    ///
    /// Throws `CryptoError.malformedInput` when either is not readable PEM, `CryptoError.invalidKey` when the
    /// certificate's key is not one the trigger accepts or the private key is not the certificate's.
    package init(certificatePEM: [UInt8], privateKeyPEM: [UInt8]) throws {
        let der = try Self.certificateDER(certificatePEM)
        let certificate = try DeviceCertificate(der: der)
        var keyText = privateKeyPEM
        defer { cleanse(&keyText) }
        guard let bio = keyText.withNonNullBytes({ bytes, count in BIO_new_mem_buf(bytes, Int32(count)) }) else {
            throw libraryFailure("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        // A password callback that supplies none: an encrypted key fails instead of prompting on a terminal.
        guard let pkey = PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) else {
            ERR_clear_error()
            throw CryptoError.malformedInput("the key file is not a readable unencrypted PEM private key")
        }
        let owned = EVPKey(pkey)
        guard try DeviceCertificate.encodedPublicKey(pkey) == certificate.subjectPublicKeyInfo else {
            throw CryptoError.invalidKey("the private key is not the certificate's")
        }
        certificateDER = der
        self.certificate = certificate
        deviceID = DeviceIDEncoding.of(certificateDER: der)
        key = owned
    }

    /// The signature of `message` in the certificate key's scheme (ECDSA as fixed-width r ‖ s; RSA PKCS#1 v1.5).
    package func signature(for message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw libraryFailure("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        try requireOpenSSL(EVP_DigestSignInit(context, nil, DeviceCertificate.digest(certificate.keyType), nil, key.pointer),
                           "EVP_DigestSignInit")
        var length = 0
        try message.withNonNullBytes { bytes, count in
            try requireOpenSSL(EVP_DigestSign(context, nil, &length, bytes, count), "EVP_DigestSign")
        }
        var out = [UInt8](repeating: 0, count: length)
        try message.withNonNullBytes { bytes, count in
            try requireOpenSSL(EVP_DigestSign(context, &out, &length, bytes, count), "EVP_DigestSign")
        }
        out.removeSubrange(length...)
        switch certificate.keyType {
        case .ecdsaP384: return try ECDSARaw.fromDER(out, width: 48)
        case .ecdsaP256: return try ECDSARaw.fromDER(out, width: 32)
        case .rsaPKCS1: return out
        }
    }

    /// The DER of the first PEM CERTIFICATE block in `pem`.
    static func certificateDER(_ pem: [UInt8]) throws -> [UInt8] {
        guard let bio = pem.withNonNullBytes({ bytes, count in BIO_new_mem_buf(bytes, Int32(count)) }) else {
            throw libraryFailure("BIO_new_mem_buf")
        }
        defer { BIO_free(bio) }
        guard let x509 = PEM_read_bio_X509(bio, nil, { _, _, _, _ in 0 }, nil) else {
            ERR_clear_error()
            throw CryptoError.malformedInput("the certificate file is not a readable PEM certificate")
        }
        defer { X509_free(x509) }
        // i2d_X509 of a certificate OpenSSL just decoded writes back the very bytes it read.
        let length = i2d_X509(x509, nil)
        guard length > 0 else { throw libraryFailure("i2d_X509") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509(x509, &cursor)
        }
        guard written == length else { throw libraryFailure("i2d_X509") }
        return der
    }
}
