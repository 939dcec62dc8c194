import COpenSSL
import Cryptography

/// X25519 (RFC 7748) key agreement through OpenSSL 3 EVP raw keys: the Noise `25519` DH function.
package struct X25519KeyPair: Sendable {
    package static let keyCount = 32

    package let privateKey: SecretBytes
    package let publicKey: [UInt8]

    /// The key pair for a 32-byte private key (clamped by X25519 itself).
    package init(privateKey: SecretBytes) throws {
        guard privateKey.count == Self.keyCount else { throw NoiseError.badKey }
        self.privateKey = privateKey
        let pkey = try Self.evpKey(privateKey)
        defer { EVP_PKEY_free(pkey) }
        var out = [UInt8](repeating: 0, count: Self.keyCount)
        var length = Self.keyCount
        guard EVP_PKEY_get_raw_public_key(pkey, &out, &length) == 1, length == Self.keyCount else {
            ERR_clear_error()
            throw NoiseError.cryptoFailure
        }
        publicKey = out
    }

    package static func generate() throws -> X25519KeyPair {
        try X25519KeyPair(privateKey: SecretBytes(try SecureRandom.bytes(count: keyCount)))
    }

    /// DH(self, peer): the 32-byte shared secret. A low-order peer key (all-zero result) is refused by OpenSSL
    /// and reported as `NoiseError.badKey`.
    package func sharedSecret(with peerPublicKey: [UInt8]) throws -> SecretBytes {
        guard peerPublicKey.count == Self.keyCount else { throw NoiseError.badKey }
        let pkey = try Self.evpKey(privateKey)
        defer { EVP_PKEY_free(pkey) }
        guard let peer = peerPublicKey.withUnsafeBufferPointer({
            EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, $0.baseAddress, Self.keyCount)
        }) else { ERR_clear_error(); throw NoiseError.badKey }
        defer { EVP_PKEY_free(peer) }
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { ERR_clear_error(); throw NoiseError.cryptoFailure }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_derive_init(context) == 1 else { ERR_clear_error(); throw NoiseError.cryptoFailure }
        guard EVP_PKEY_derive_set_peer(context, peer) == 1 else { ERR_clear_error(); throw NoiseError.badKey }
        var out = [UInt8](repeating: 0, count: Self.keyCount)
        var length = Self.keyCount
        guard EVP_PKEY_derive(context, &out, &length) == 1, length == Self.keyCount else {
            ERR_clear_error()
            throw NoiseError.badKey
        }
        defer { out.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) } }
        return SecretBytes(out)
    }

    private static func evpKey(_ privateKey: SecretBytes) throws -> OpaquePointer {
        let key = privateKey.withBytes { raw in
            EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        guard let key else { ERR_clear_error(); throw NoiseError.badKey }
        return key
    }
}
