/// Hexadecimal text to bytes and back, for the store's own formats (PostgreSQL's `bytea` hex output, a key file of
/// hex digits, lock keys).
package enum HexDigits {
    private static let lower: [UInt8] = Array("0123456789abcdef".utf8)

    /// `bytes` as lower-case hex digits, two a byte (a table look-up, not `String(format:)`, which costs a
    /// formatter call per byte).
    package static func encode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var index = 0
            for byte in bytes {
                buffer[index] = lower[Int(byte >> 4)]
                buffer[index + 1] = lower[Int(byte & 0x0f)]
                index += 2
            }
            return index
        }
    }

    /// The bytes that `digits` (an even number of hex digits, either case) spell; nil for anything else.
    package static func decode<C: Collection>(_ digits: C) -> [UInt8]? where C.Element == UInt8 {
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index != digits.endIndex {
            let next = digits.index(after: index)
            guard let hi = nibble(digits[index]), let lo = nibble(digits[next]) else { return nil }
            out.append(hi << 4 | lo)
            index = digits.index(after: next)
        }
        return out
    }
}
