/// Syncthing Device IDs: the SHA-256 of a device's certificate (DER) in RFC 4648 base32 without padding (52
/// characters), split into four groups of 13 that each get a Luhn mod 32 check character, shown as eight
/// dash-separated groups of seven (`XXXXXXX-XXXXXXX-…`, 63 characters).
///
/// The algorithm, with a worked example, is in docs/protocols/trigger-v2.md ("Device IDs").
package enum DeviceIDEncoding {
    /// RFC 4648 base32's alphabet, which is also the Luhn alphabet.
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// The canonical (upper-case, dashed) Device ID of a certificate given as DER.
    package static func of(certificateDER der: [UInt8]) -> String {
        of(digest: SHA256.hash(der))
    }

    /// The canonical Device ID of a 32-byte SHA-256 digest.
    package static func of(digest: [UInt8]) -> String {
        precondition(digest.count == SHA256.digestCount, "a Device ID encodes a 32-byte digest")
        let base32 = base32NoPadding(digest)
        var checked: [UInt8] = []
        for group in stride(from: 0, to: 52, by: 13) {
            let chunk = Array(base32[group..<(group + 13)])
            checked += chunk
            checked.append(luhn32(chunk))
        }
        var out: [UInt8] = []
        for (index, character) in checked.enumerated() {
            if index > 0 && index % 7 == 0 { out.append(UInt8(ascii: "-")) }
            out.append(character)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether a canonical Device ID's four check characters are right (a typo or a made-up ID fails).
    package static func hasValidCheckCharacters(_ canonical: String) -> Bool {
        let compact = Array(canonical.utf8.filter { $0 != UInt8(ascii: "-") })
        guard compact.count == 56, compact.allSatisfy(alphabet.contains) else { return false }
        return stride(from: 0, to: 56, by: 14).allSatisfy { group in
            luhn32(Array(compact[group..<(group + 13)])) == compact[group + 13]
        }
    }

    /// RFC 4648 base32 of `bytes`, upper case, without `=` padding.
    static func base32NoPadding(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = 0, bits = 0
        for byte in bytes {
            buffer = buffer << 8 | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[(buffer >> bits) & 31])
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return out
    }

    /// Syncthing's Luhn mod 32 check character of base32 characters: factors 1, 2, 1, 2, … from the first
    /// character; each product is folded as `p / 32 + p % 32`; the check is `(32 − sum mod 32) mod 32`.
    static func luhn32(_ characters: [UInt8]) -> UInt8 {
        var factor = 1, sum = 0
        for character in characters {
            let codepoint = alphabet.firstIndex(of: character) ?? 0
            let addend = factor * codepoint
            factor = factor == 2 ? 1 : 2
            sum += addend / 32 + addend % 32
        }
        return alphabet[(32 - sum % 32) % 32]
    }
}
