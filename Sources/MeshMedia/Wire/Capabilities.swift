/// Peer capabilities: a UInt64 bitfield carried as minimal little-endian bytes (at least one byte).
package struct Capabilities: OptionSet, Equatable, Sendable, Hashable {
    package let rawValue: UInt64
    package init(rawValue: UInt64) { self.rawValue = rawValue }

    package static let prekeys = Capabilities(rawValue: 1 << 0)
    package static let wifiBulk = Capabilities(rawValue: 1 << 1)
    package static let gateway = Capabilities(rawValue: 1 << 2)
    package static let groups = Capabilities(rawValue: 1 << 3)
    package static let board = Capabilities(rawValue: 1 << 4)
    package static let vouch = Capabilities(rawValue: 1 << 5)
    package static let meshDiagnostics = Capabilities(rawValue: 1 << 6)
    package static let bridge = Capabilities(rawValue: 1 << 7)
    package static let privateMedia = Capabilities(rawValue: 1 << 8)
    package static let privateMediaReceipts = Capabilities(rawValue: 1 << 9)

    /// What this node advertises.
    package static let advertised: Capabilities = [.privateMedia]

    /// Minimal little-endian bytes: no trailing zero byte, at least one byte (`00` for none).
    package func encoded() -> [UInt8] {
        var value = rawValue
        var out: [UInt8] = [UInt8(value & 0xff)]
        value >>= 8
        while value != 0 { out.append(UInt8(value & 0xff)); value >>= 8 }
        return out
    }

    /// Lenient decode (announces): the low 8 bytes, little-endian; empty means none.
    package static func decodeLenient<C: Collection>(_ bytes: C) -> Capabilities where C.Element == UInt8 {
        var value: UInt64 = 0
        for (index, byte) in bytes.prefix(8).enumerated() { value |= UInt64(byte) << UInt64(8 * index) }
        return Capabilities(rawValue: value)
    }

    /// Strict decode (authenticated peer state): 1 to 8 bytes, minimal.
    package static func decodeStrict<C: Collection>(_ bytes: C) throws -> Capabilities where C.Element == UInt8 {
        guard (1...8).contains(bytes.count) else { throw WireError.badLength }
        if bytes.count > 1, Array(bytes).last == 0 { throw WireError.nonCanonical }
        return decodeLenient(bytes)
    }
}
