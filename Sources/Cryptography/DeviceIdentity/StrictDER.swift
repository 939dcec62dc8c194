/// A strict DER (X.690 distinguished encoding) reader for the few structures the authenticated trigger reads.
///
/// One element at a time: single-byte tags only (low tag numbers), definite lengths in their shortest form (no
/// `0x80` indefinite length, no long form for a length below 128, no leading zero length byte, at most four
/// length bytes), and contents that lie wholly inside the input. Anything else is `CryptoError.malformedInput`.
/// The format is in docs/protocols/trigger-v2.md ("The certificate").
struct StrictDER {
    /// One element: its tag byte, the bytes of the whole element (tag, length, contents) and of its contents.
    struct Element {
        let tag: UInt8
        let encoded: ArraySlice<UInt8>
        let contents: ArraySlice<UInt8>
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    /// A reader over `bytes` (often the contents of an enclosing element).
    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    /// Whether every byte was read.
    var atEnd: Bool { position == bytes.endIndex }

    /// The next element's tag, without reading it; nil at the end.
    var nextTag: UInt8? { atEnd ? nil : bytes[position] }

    /// Reads the next element, which must carry `tag`.
    mutating func read(_ tag: UInt8) throws -> Element {
        let element = try readAny()
        guard element.tag == tag else { throw CryptoError.malformedInput("DER element has an unexpected tag") }
        return element
    }

    /// Reads the next element, whatever its tag.
    mutating func readAny() throws -> Element {
        let start = position
        guard bytes.endIndex - position >= 2 else { throw CryptoError.malformedInput("DER element is truncated") }
        let tag = bytes[position]
        // Tag number 31 announces a multi-byte tag, which nothing here uses.
        guard tag & 0x1f != 0x1f else { throw CryptoError.malformedInput("DER multi-byte tags are not accepted") }
        let first = bytes[position + 1]
        position += 2
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7f)
            guard (1...4).contains(count) else { throw CryptoError.malformedInput("DER length is indefinite or too long") }
            guard bytes.endIndex - position >= count else { throw CryptoError.malformedInput("DER length is truncated") }
            guard bytes[position] != 0 else { throw CryptoError.malformedInput("DER length has a leading zero byte") }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[position])
                position += 1
            }
            guard length >= 0x80 else { throw CryptoError.malformedInput("DER length is not in its shortest form") }
        }
        guard bytes.endIndex - position >= length else { throw CryptoError.malformedInput("DER contents are truncated") }
        let contents = bytes[position..<(position + length)]
        position += length
        return Element(tag: tag, encoded: bytes[start..<position], contents: contents)
    }
}
