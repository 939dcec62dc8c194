/// The typed plaintext inside a Noise transport message: one type byte, then the body.
///
/// 0x09 is the prerelease private-file alias: it decodes as `.privateFile` and is never emitted, so
/// `09 cafe` decodes as a file and re-encodes as `20 cafe`.
package struct NoisePayload: Equatable, Sendable {
    package enum Kind: UInt8, Sendable, CaseIterable {
        case privateMessage = 0x01
        case readReceipt = 0x02
        case delivered = 0x03
        case voiceFrame = 0x08
        case verifyChallenge = 0x10
        case verifyResponse = 0x11
        case privateFile = 0x20
        case authenticatedPeerState = 0x21
    }

    /// The prerelease iOS value for a private file; accepted on receive only.
    package static let privateFileAlias: UInt8 = 0x09

    package var kind: Kind
    package var body: [UInt8]
    /// True when the sender used the 0x09 alias (for counting; the value is canonical either way).
    package var usedAlias: Bool

    package init(kind: Kind, body: [UInt8], usedAlias: Bool = false) {
        self.kind = kind
        self.body = body
        self.usedAlias = usedAlias
    }

    /// Type byte then body; always the canonical type byte.
    package func encoded() -> [UInt8] { [kind.rawValue] + body }

    /// Decodes the type byte (canonicalizing 0x09) and keeps the rest as the body.
    package static func decode<C: Collection>(_ input: C) throws -> NoisePayload where C.Element == UInt8 {
        guard let first = input.first else { throw WireError.truncated }
        let body = Array(input.dropFirst())
        if first == privateFileAlias { return NoisePayload(kind: .privateFile, body: body, usedAlias: true) }
        guard let kind = Kind(rawValue: first) else { throw WireError.unknownType }
        return NoisePayload(kind: kind, body: body)
    }

    /// True when a plaintext's first byte is a private file (0x20 or the 0x09 alias).
    package static func isPrivateFile(typeByte: UInt8) -> Bool {
        typeByte == Kind.privateFile.rawValue || typeByte == privateFileAlias
    }
}
