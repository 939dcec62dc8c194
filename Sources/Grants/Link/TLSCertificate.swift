import COpenSSL
import Cryptography
import Runner

/// A self-signed X.509 certificate over the node's Ed25519 endpoint key, made in memory for each process.
///
/// Nobody trusts it for its name or its issuer: the link authenticates the key inside it (seed §4.1). TLS 1.3's
/// CertificateVerify proves the peer holds the private half.
enum TLSCertificate {
    /// Builds the certificate; the caller frees it with `X509_free`.
    static func make(for identity: NodeIdentity) throws -> OpaquePointer {
        guard let certificate = X509_new() else { throw JobError.internal("cannot allocate a certificate") }
        do {
            try identity.privateKey.withEVPPrivateKey { key in
                guard X509_set_version(certificate, 2) == 1,
                      ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1) == 1,
                      X509_gmtime_adj(X509_getm_notBefore(certificate), -86_400) != nil,
                      X509_gmtime_adj(X509_getm_notAfter(certificate), 86_400 * 3650) != nil,
                      X509_set_pubkey(certificate, key) == 1,
                      let name = X509_get_subject_name(certificate),
                      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "vnidrop-endpoint", -1, -1, 0) == 1,
                      X509_set_issuer_name(certificate, name) == 1,
                      // Ed25519 signs the whole message itself: no digest is given.
                      X509_sign(certificate, key, nil) > 0 else {
                    throw JobError.internal("cannot build the link certificate")
                }
            }
        } catch {
            X509_free(certificate)
            ERR_clear_error()
            throw error
        }
        return certificate
    }

    /// The raw Ed25519 public key of the peer's certificate on `ssl`, or nil when there is none or it is not Ed25519.
    static func peerEndpoint(_ ssl: OpaquePointer) -> EndpointID? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        guard let key = X509_get0_pubkey(certificate), EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 else { return nil }
        var raw = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == 32 else { ERR_clear_error(); return nil }
        return try? EndpointID(bytes: raw)
    }
}
