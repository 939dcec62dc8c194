import Cryptography
import Runner

/// A node's identity on the link: the 32-byte Ed25519 public key of its endpoint key, shown as 64 lowercase hex.
///
/// The endpoint id is the only real identity (docs/protocols/grants-and-link.md §4.1); labels and claimed names are untrusted data.
package struct EndpointID: Hashable, Sendable {
    /// The raw public key.
    package let bytes: [UInt8]

    /// An id from 32 raw bytes.
    package init(bytes: [UInt8]) throws {
        guard bytes.count == 32 else { throw JobError.badInput("endpoint-malformed", "an endpoint id is 32 bytes") }
        self.bytes = bytes
    }

    /// Parses 64 hex digits (a usage error otherwise; the message never repeats the input).
    package init(hex text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count == 64, let decoded = try? Hex.decode(trimmed) else {
            throw JobError.usage("an endpoint id is 64 hex digits (see 'job node show' on the other device)")
        }
        bytes = decoded
    }

    /// 64 lowercase hex digits.
    package var hex: String { Hex.encode(bytes) }

    /// The short fingerprint for out-of-band checks: the first 8 bytes of SHA-256(id) as 4 groups of 4 hex digits.
    package var fingerprint: String {
        let digest = Hex.encode(Array(SHA256.hash(bytes).prefix(8)))
        var groups: [String] = []
        var index = digest.startIndex
        while index < digest.endIndex {
            let end = digest.index(index, offsetBy: 4)
            groups.append(String(digest[index..<end]))
            index = end
        }
        return groups.joined(separator: "-")
    }
}

import Foundation
