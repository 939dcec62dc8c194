/// Lowercase hexadecimal encoding and strict decoding.
package enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes`, two characters per byte, no prefix: a table look-up written straight into the
    /// string's storage (not `String(format:)`, which costs a formatter call per byte). The one hex encoder.
    package static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = digits[Int(byte >> 4)]
                buffer[index + 1] = digits[Int(byte & 0x0f)]
                index += 2
            }
            return index
        }
    }

    /// Decodes hex (either case), rejecting odd lengths, prefixes, whitespace and any non-hex character.
    package static func decode(_ text: String) throws -> [UInt8] {
        guard text.utf8.count % 2 == 0 else { throw CryptoError.malformedInput("hex has an odd number of digits") }
        guard let bytes = bytes(text.utf8) else { throw CryptoError.malformedInput("hex contains a character that is not a hex digit") }
        return bytes
    }

    /// The bytes that `digits` (an even number of hex digits, either case, nothing else) spell; nil for anything
    /// else. The one hex decoder: text, key files and PostgreSQL's `bytea` output all come through here (inlinable,
    /// so a caller's buffer type is specialised in its own module).
    @inlinable
    package static func bytes<C: Collection>(_ digits: C) -> [UInt8]? where C.Element == UInt8 {
        guard digits.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index != digits.endIndex {
            let next = digits.index(after: index)
            guard let high = value(digits[index]), let low = value(digits[next]) else { return nil }
            out.append(high << 4 | low)
            index = digits.index(after: next)
        }
        return out
    }

    /// The value of one hex digit (either case), or nil.
    @usableFromInline
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
