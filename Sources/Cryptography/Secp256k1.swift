import CSecp256k1

/// ES256K verification and public-key recovery with libsecp256k1 (no private key involved).
package enum Secp256k1 {
    /// Whether `signature` (64-byte r ‖ s) signs the 32-byte `digest` for `publicKey` (33 or 65 bytes SEC1).
    ///
    /// High-S signatures are refused (libsecp256k1's rule): every signer here and did-jwt emit low S.
    package static func isValidSignature(_ signature: [UInt8], digest: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, digest.count == 32, publicKey.count == 33 || publicKey.count == 65 else { return false }
        let context = secp256k1StaticContext
        var key = secp256k1_pubkey()
        var parsed = secp256k1_ecdsa_signature()
        guard secp256k1_ec_pubkey_parse(context, &key, publicKey, publicKey.count) == 1,
              secp256k1_ecdsa_signature_parse_compact(context, &parsed, signature) == 1 else { return false }
        return secp256k1_ecdsa_verify(context, &parsed, digest, &key) == 1
    }

    /// The uncompressed (65-byte) public keys that could have made `signature` over `digest`,
    /// trying recovery ids 0 and 1; empty if the signature is malformed or high-S.
    ///
    /// This is how a `did:ethr` issuer is checked: a token verifies if one recovered key's
    /// Ethereum address equals the DID's. (Ids 2 and 3 need r ≥ n, which has negligible probability.)
    package static func recoverPublicKeys(signature64 signature: [UInt8], digest: [UInt8]) -> [[UInt8]] {
        guard signature.count == 64, digest.count == 32 else { return [] }
        let context = secp256k1StaticContext
        var plain = secp256k1_ecdsa_signature()
        var normalized = secp256k1_ecdsa_signature()
        guard secp256k1_ecdsa_signature_parse_compact(context, &plain, signature) == 1 else { return [] }
        // normalize returns 1 when the input had a high S: refuse it, as verification would.
        guard secp256k1_ecdsa_signature_normalize(context, &normalized, &plain) == 0 else { return [] }

        var keys: [[UInt8]] = []
        for recoveryID in Int32(0)...1 {
            var recoverable = secp256k1_ecdsa_recoverable_signature()
            var key = secp256k1_pubkey()
            guard secp256k1_ecdsa_recoverable_signature_parse_compact(context, &recoverable, signature, recoveryID) == 1,
                  secp256k1_ecdsa_recover(context, &key, &recoverable, digest) == 1 else { continue }
            var output = [UInt8](repeating: 0, count: 65)
            var length = 65
            _ = secp256k1_ec_pubkey_serialize(context, &output, &length, &key, UInt32(SECP256K1_FLAGS_TYPE_COMPRESSION))
            keys.append(output)
        }
        return keys
    }
}
