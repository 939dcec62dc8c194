import Cryptography

/// Checks the two DID forms the module stores: `did:ethr:0x<40 hex>` (can mint) and `did:peer:…` (passkey; cannot).
package enum IdentityDID {
    /// How an identity signs.
    package enum Method: String, Sendable {
        /// A secp256k1 (seed-phrase) identity: its key is held here, sealed.
        case ethr
        /// A passkey identity: each signature is a WebAuthn assertion, so nothing here can mint for it.
        case peer
    }

    /// Whether `did` is `did:ethr:0x` followed by 40 hex digits.
    package static func isEthr(_ did: String) -> Bool { DIDEthr.address(fromDID: did) != nil }

    /// Whether `did` is a plausible `did:peer` DID: the prefix, then 1–4096 characters from the DID method-specific
    /// id alphabet (letters, digits, `.`, `-`, `_`, `:`, `%`).
    package static func isPeer(_ did: String) -> Bool {
        let prefix = "did:peer:"
        guard did.hasPrefix(prefix) else { return false }
        let rest = did.utf8.dropFirst(prefix.utf8.count)
        guard (1...4096).contains(rest.count) else { return false }
        return rest.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "%")
        }
    }
}
