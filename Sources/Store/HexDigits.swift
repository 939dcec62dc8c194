import Cryptography

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

    /// The bytes that `digits` (an even number of hex digits, either case) spell; nil for anything else
    /// (`Hex.bytes`, the one decoder).
    @inlinable
    package static func decode<C: Collection>(_ digits: C) -> [UInt8]? where C.Element == UInt8 { Hex.bytes(digits) }
}
