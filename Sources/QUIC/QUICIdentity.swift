import CQUIC

/// Our endpoint key as TLS credentials: the RFC 7250 raw Ed25519 public key and its private half.
///
/// Made once and shared: GnuTLS reads credentials from many sessions at once without changing them.
package final class QUICIdentity: @unchecked Sendable {
    let creds: OpaquePointer
    /// The 32-byte Ed25519 public key (the endpoint id).
    package let publicKey: [UInt8]

    /// `seed` is the 32-byte Ed25519 secret key, `publicKey` its public key. Nil when GnuTLS refuses them.
    package init?(seed: [UInt8], publicKey: [UInt8]) {
        guard seed.count == 32, publicKey.count == 32, let creds = vq_creds_new(seed, publicKey) else { return nil }
        self.creds = creds
        self.publicKey = publicKey
    }

    deinit { vq_creds_free(creds) }
}
