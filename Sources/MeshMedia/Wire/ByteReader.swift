/// A bounds-checked cursor over a byte slice: every read either returns the bytes or throws `WireError.truncated`.
///
/// Lengths are checked against what remains before anything is copied, so a hostile length field can never
/// cause an allocation larger than the input itself.
struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private(set) var offset: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    /// Bytes not yet read.
    var remaining: Int { bytes.endIndex - offset }
    var isAtEnd: Bool { offset >= bytes.endIndex }

    mutating func byte() throws -> UInt8 {
        guard remaining >= 1 else { throw WireError.truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() throws -> UInt16 {
        let b = try take(2)
        return UInt16(b[b.startIndex]) << 8 | UInt16(b[b.startIndex + 1])
    }

    mutating func uint32() throws -> UInt32 {
        try take(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func uint64() throws -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The next `count` bytes (a view into the input; copy with `Array(...)` to keep them).
    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw WireError.truncated }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// Peeks `count` bytes ahead without consuming; nil when fewer remain.
    func peek(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        return bytes[offset..<(offset + count)]
    }

    /// Everything not yet read.
    mutating func rest() -> ArraySlice<UInt8> {
        defer { offset = bytes.endIndex }
        return bytes[offset...]
    }
}

/// Big-endian appends for encoders.
extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ value: UInt16) {
        append(UInt8(value >> 8)); append(UInt8(value & 0xff))
    }
    mutating func appendBigEndian(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }
    mutating func appendBigEndian(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8((value >> UInt64(shift)) & 0xff)) }
    }
}
