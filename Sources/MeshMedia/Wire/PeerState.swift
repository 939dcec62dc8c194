/// Authenticated peer state: the body of Noise payload 0x21, sent after each completed or rekeyed session.
///
/// `version (1)` then TLVs with a 1-byte tag and 1-byte length: 0x01 capabilities (1…8 bytes, minimal
/// little-endian), 0x02 Ed25519 signing key (32). Both required, each once; unknown tags skipped.
package struct PeerState: Equatable, Sendable {
    package static let version: UInt8 = 1

    package var capabilities: Capabilities
    package var signingPublicKey: [UInt8]

    package init(capabilities: Capabilities, signingPublicKey: [UInt8]) {
        self.capabilities = capabilities
        self.signingPublicKey = signingPublicKey
    }

    package func encoded() throws -> [UInt8] {
        guard signingPublicKey.count == 32 else { throw WireError.badLength }
        let caps = capabilities.encoded()
        return [Self.version, 0x01, UInt8(caps.count)] + caps + [0x02, 32] + signingPublicKey
    }

    package static func decode<C: Collection>(_ input: C) throws -> PeerState where C.Element == UInt8 {
        let bytes = Array(input)
        var reader = ByteReader(bytes)
        guard try reader.byte() == version else { throw WireError.unsupportedVersion }
        var capabilities: Capabilities?
        var key: [UInt8]?
        while !reader.isAtEnd {
            let tag = try reader.byte()
            let length = Int(try reader.byte())
            let value = try reader.take(length)
            switch tag {
            case 0x01:
                guard capabilities == nil else { throw WireError.duplicateField }
                capabilities = try Capabilities.decodeStrict(value)
            case 0x02:
                guard key == nil else { throw WireError.duplicateField }
                guard length == 32 else { throw WireError.badLength }
                key = Array(value)
            default: continue
            }
        }
        guard let capabilities, let key else { throw WireError.missingField }
        return PeerState(capabilities: capabilities, signingPublicKey: key)
    }
}
