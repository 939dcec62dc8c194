import COpenSSL

/// The OpenSSL steps of StoreKit chain verification: parse DER, check an extension OID, verify a chain to one
/// trusted root at a given instant, and verify an ES256 signature with a certificate's key.
enum X509Chain {
    /// A parsed certificate (caller frees with `X509_free`), or nil when `der` is not exactly one certificate.
    static func parse(_ der: [UInt8]) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return nil }
            guard let cursor, let base = buffer.baseAddress, cursor - base == buffer.count else {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
    }

    /// The certificate's DER encoding.
    static func der(of certificate: OpaquePointer) -> [UInt8]? {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &out)
        guard length > 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// Whether the certificate carries an extension with object identifier `oid` (dotted form).
    static func hasExtension(_ certificate: OpaquePointer, oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else { return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(certificate, object, -1) >= 0
    }

    /// Whether the certificate has a keyUsage extension and it includes keyCertSign (a CA certificate without
    /// keyUsage is refused, as strict X.509 checks do).
    static func mayIssueCertificates(_ certificate: OpaquePointer) -> Bool {
        let usage = X509_get_key_usage(certificate)
        guard X509_get_extension_flags(certificate) & UInt32(EXFLAG_KUSAGE) != 0, X509_get_extension_flags(certificate) & UInt32(EXFLAG_INVALID) == 0 else { return false }
        return usage & UInt32(KU_KEY_CERT_SIGN) != 0
    }

    /// Whether the certificate carries an authority key identifier with a key identifier.
    static func hasAuthorityKeyIdentifier(_ certificate: OpaquePointer) -> Bool {
        guard let identifier = X509_get0_authority_key_id(certificate) else { return false }
        return ASN1_STRING_length(identifier) > 0
    }

    /// Whether `leaf` chains through `intermediate` to `root` (the only trust anchor), every signature and
    /// validity period holding at `instant` (Unix seconds).
    static func verify(leaf: OpaquePointer, intermediate: OpaquePointer, root: OpaquePointer, at instant: Int64) -> Bool {
        guard let store = X509_STORE_new() else { return false }
        defer { X509_STORE_free(store) }
        guard X509_STORE_add_cert(store, root) == 1 else { return false }
        guard let untrusted = OPENSSL_sk_new_null() else { return false }
        defer { OPENSSL_sk_free(untrusted) }
        guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(intermediate)) > 0 else { return false }
        guard let context = X509_STORE_CTX_new() else { return false }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf, untrusted) == 1 else { return false }
        X509_STORE_CTX_set_time(context, 0, time_t(instant))
        // Exactly leaf → intermediate → root: no longer path, nothing else trusted.
        X509_STORE_CTX_set_depth(context, 2)
        guard X509_verify_cert(context) == 1 else { return false }
        guard let chain = X509_STORE_CTX_get0_chain(context), OPENSSL_sk_num(chain) == 3 else { return false }
        let top = OpaquePointer(OPENSSL_sk_value(chain, 2)), middle = OpaquePointer(OPENSSL_sk_value(chain, 1))
        return X509_cmp(top, root) == 0 && X509_cmp(middle, intermediate) == 0
    }

    /// Whether `signature` (64 bytes r ‖ s) is a valid ES256 signature of `message` by the P-256 key of `certificate`.
    static func verifyES256(_ signature: [UInt8], message: [UInt8], certificate: OpaquePointer) -> Bool {
        guard signature.count == 64, let key = X509_get0_pubkey(certificate), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return false }
        var groupName = [CChar](repeating: 0, count: 64)
        var nameLength = 0
        guard EVP_PKEY_get_group_name(key, &groupName, groupName.count, &nameLength) == 1, nameLength < groupName.count else { return false }
        let group = String(decoding: groupName.prefix(nameLength).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard group == "prime256v1" || group == "P-256" else { return false }
        guard let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let r = signature[0..<32].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = signature[32..<64].withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else { BN_free(r); BN_free(s); return false }
        var derPointer: UnsafeMutablePointer<UInt8>?
        let derLength = i2d_ECDSA_SIG(sig, &derPointer)
        guard derLength > 0, let derPointer else { return false }
        defer { CRYPTO_free(derPointer, #fileID, #line) }
        guard let md = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_DigestVerifyInit(md, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return message.withUnsafeBufferPointer { m in
            EVP_DigestVerify(md, derPointer, Int(derLength), m.baseAddress, m.count) == 1
        }
    }
}
