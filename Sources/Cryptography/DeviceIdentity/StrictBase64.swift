/// RFC 4648 §4 base64 (standard alphabet, `=` padding), strict: only the canonical encoding of a byte string is
/// accepted — padding present, no line breaks or spaces, and the unused low bits of the last character zero — so one
/// byte string has exactly one accepted text (docs/protocols/trigger-v2.md, "Encodings").
package enum StrictBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = Int8(index) }
        return table
    }()

    /// The canonical base64 text of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let remaining = bytes.count - index
            let b0 = Int(bytes[index]), b1 = remaining > 1 ? Int(bytes[index + 1]) : 0, b2 = remaining > 2 ? Int(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[triple >> 18 & 63])
            out.append(alphabet[triple >> 12 & 63])
            out.append(remaining > 1 ? alphabet[triple >> 6 & 63] : UInt8(ascii: "="))
            out.append(remaining > 2 ? alphabet[triple & 63] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a canonical base64 text; nil for anything else (including text longer than `maximumCount`
    /// characters, checked before decoding).
    package static func decode(_ text: String, maximumCount: Int = .max) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count <= maximumCount, input.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let last = index + 4 == input.count
            let padding = last ? (input[index + 3] == UInt8(ascii: "=") ? (input[index + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var quad = 0
            for offset in 0..<4 {
                if offset >= 4 - padding {
                    quad <<= 6
                    continue
                }
                let value = values[Int(input[index + offset])]
                guard value >= 0 else { return nil }
                quad = quad << 6 | Int(value)
            }
            out.append(UInt8(quad >> 16 & 0xff))
            if padding < 2 { out.append(UInt8(quad >> 8 & 0xff)) }
            if padding < 1 { out.append(UInt8(quad & 0xff)) }
            // Canonical only: the bits below the last byte must be zero.
            if padding == 2 && quad & 0xffff != 0 || padding == 1 && quad & 0xff != 0 { return nil }
            index += 4
        }
        return out
    }
}
