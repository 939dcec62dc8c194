/// Base64url (RFC 4648 §5) without padding, as JWTs use it, with a strict decoder.
package enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Reverse table: byte value → 6-bit value, or 0xff when the byte is not in the url alphabet.
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, c) in alphabet.enumerated() { table[Int(c)] = UInt8(index) }
        return table
    }()

    /// Encodes `bytes` with the url-safe alphabet and no `=` padding.
    package static func encode(_ bytes: [UInt8]) -> String {
        String(decoding: encodeToASCII(bytes), as: UTF8.self)
    }

    /// The encoding as ASCII bytes (what a JWT signing input is built from).
    static func encodeToASCII(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let n = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
        case 2:
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
        default:
            break
        }
        return out
    }

    /// Decodes unpadded base64url, strictly.
    ///
    /// Rejects `=` padding, whitespace, the standard alphabet's `+` and `/`, any other character
    /// outside the url alphabet, lengths no encoder produces (`count % 4 == 1`), and encodings
    /// whose unused trailing bits are not zero (so every byte string has exactly one encoding).
    package static func decode(_ text: String) throws -> [UInt8] {
        try decode(ascii: Array(text.utf8))
    }

    /// `decode(_:)` over ASCII bytes.
    static func decode<C: Collection>(ascii chars: C) throws -> [UInt8] where C.Element == UInt8 {
        guard chars.count % 4 != 1 else { throw CryptoError.malformedInput("base64url length is impossible") }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = reverse[Int(c)]
            guard v != 0xff else { throw CryptoError.malformedInput("base64url contains a character outside its alphabet") }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits (2 or 4) must be zero: otherwise two strings would decode to the same bytes.
        guard accumulator == 0 else { throw CryptoError.malformedInput("base64url has non-zero trailing bits") }
        return out
    }
}
