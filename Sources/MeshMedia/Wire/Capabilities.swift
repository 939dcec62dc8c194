/// Peer capabilities: a UInt64 bitfield carried as minimal little-endian bytes (at least one byte).
public struct Capabilities: OptionSet, Equatable, Sendable, Hashable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let prekeys = Capabilities(rawValue: 1 << 0)
    public static let wifiBulk = Capabilities(rawValue: 1 << 1)
    public static let gateway = Capabilities(rawValue: 1 << 2)
    public static let groups = Capabilities(rawValue: 1 << 3)
    public static let board = Capabilities(rawValue: 1 << 4)
    public static let vouch = Capabilities(rawValue: 1 << 5)
    public static let meshDiagnostics = Capabilities(rawValue: 1 << 6)
    public static let bridge = Capabilities(rawValue: 1 << 7)
    public static let privateMedia = Capabilities(rawValue: 1 << 8)
    public static let privateMediaReceipts = Capabilities(rawValue: 1 << 9)

    /// What this node advertises.
    public static let advertised: Capabilities = [.privateMedia]

    /// Minimal little-endian bytes: no trailing zero byte, at least one byte (`00` for none).
    public func encoded() -> [UInt8] {
        var value = rawValue
        var out: [UInt8] = [UInt8(value & 0xff)]
        value >>= 8
        while value != 0 { out.append(UInt8(value & 0xff)); value >>= 8 }
        return out
    }

    /// Lenient decode (announces): the low 8 bytes, little-endian; empty means none.
    public static func decodeLenient<C: Collection>(_ bytes: C) -> Capabilities where C.Element == UInt8 {
        var value: UInt64 = 0
        for (index, byte) in bytes.prefix(8).enumerated() { value |= UInt64(byte) << UInt64(8 * index) }
        return Capabilities(rawValue: value)
    }

    /// Strict decode (authenticated peer state): 1 to 8 bytes, minimal.
    public static func decodeStrict<C: Collection>(_ bytes: C) throws -> Capabilities where C.Element == UInt8 {
        guard (1...8).contains(bytes.count) else { throw WireError.badLength }
        if bytes.count > 1, Array(bytes).last == 0 { throw WireError.nonCanonical }
        return decodeLenient(bytes)
    }
}
