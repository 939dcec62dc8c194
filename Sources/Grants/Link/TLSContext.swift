import COpenSSL
import CShims
import Runner

/// An OpenSSL context for one side of the link: TLS 1.3 only, the node's self-signed Ed25519 certificate, and a
/// peer certificate required on both sides.
///
/// The verify callback accepts any self-signed chain: trust comes from comparing the peer's raw public key with
/// the expected endpoint id after the handshake (dialer), or from taking it as the remote endpoint (server).
/// Sendable because it is configured once in `init` and afterwards only handed to `SSL_new`, which OpenSSL allows
/// from many threads at once.
final class TLSContext: @unchecked Sendable {
    enum Role { case server, client }

    let pointer: OpaquePointer

    init(identity: NodeIdentity, role: Role) throws {
        guard let context = SSL_CTX_new(role == .server ? TLS_server_method() : TLS_client_method()) else {
            throw JobError.internal("cannot create a TLS context")
        }
        pointer = context
        let certificate = try TLSCertificate.make(for: identity)
        defer { X509_free(certificate) }
        let installed = identity.privateKey.withEVPPrivateKey { key in
            SSL_CTX_use_certificate(context, certificate) == 1 && SSL_CTX_use_PrivateKey(context, key) == 1 && SSL_CTX_check_private_key(context) == 1
        }
        guard installed,
              shim_SSL_CTX_set_min_proto_version(context, TLS1_3_VERSION) == 1,
              shim_SSL_CTX_set_max_proto_version(context, TLS1_3_VERSION) == 1 else {
            ERR_clear_error()
            throw JobError.internal("cannot configure the TLS context")
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, _ in 1 }
        // No session tickets: every connection is a full handshake in which both keys are proven afresh.
        SSL_CTX_set_num_tickets(context, 0)
        if role == .server {
            SSL_CTX_set_alpn_select_cb(context, { _, out, outLength, offered, offeredLength, _ in
                // The first protocol the client offers that this node speaks; none → fatal alert.
                guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                var index = 0
                let total = Int(offeredLength)
                while index < total {
                    let length = Int(offered[index])
                    let start = index + 1
                    guard length > 0, start + length <= total else { break }
                    let name = String(decoding: UnsafeBufferPointer(start: offered + start, count: length), as: UTF8.self)
                    if LinkProtocolName(rawValue: name) != nil {
                        out.pointee = UnsafePointer(offered + start)
                        outLength.pointee = UInt8(length)
                        return SSL_TLSEXT_ERR_OK
                    }
                    index = start + length
                }
                return SSL_TLSEXT_ERR_ALERT_FATAL
            }, nil)
        }
    }

    deinit { SSL_CTX_free(pointer) }
}
