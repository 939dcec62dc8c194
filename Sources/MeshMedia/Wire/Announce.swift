/// The announce payload: 1-byte tag, 1-byte length TLVs; unknown tags skipped.
///
/// Decoding is as lenient as iOS's: a single trailing byte is ignored, and a neighbours TLV whose length is not
/// a non-zero multiple of 8 is ignored (the announce is still accepted).
///
/// 0x01 nickname, 0x02 Noise static key (32), 0x03 Ed25519 signing key (32), 0x04 direct neighbours
/// (8 bytes each), 0x05 capabilities, 0x06 bridge geohash. Nickname and both keys are required.
package struct Announce: Equatable, Sendable {
    package var nickname: String
    package var noisePublicKey: [UInt8]
    package var signingPublicKey: [UInt8]
    package var neighbours: [[UInt8]]
    /// nil when the TLV was absent (a client from before capability advertisement).
    package var capabilities: Capabilities?
    package var bridgeGeohash: String?

    package init(nickname: String, noisePublicKey: [UInt8], signingPublicKey: [UInt8], neighbours: [[UInt8]] = [],
                capabilities: Capabilities?, bridgeGeohash: String? = nil) {
        self.nickname = nickname
        self.noisePublicKey = noisePublicKey
        self.signingPublicKey = signingPublicKey
        self.neighbours = neighbours
        self.capabilities = capabilities
        self.bridgeGeohash = bridgeGeohash
    }

    package func encoded() throws -> [UInt8] {
        var out: [UInt8] = []
        func tlv(_ tag: UInt8, _ value: [UInt8]) throws {
            guard value.count <= 255 else { throw WireError.unencodable }
            out.append(tag); out.append(UInt8(value.count)); out += value
        }
        guard noisePublicKey.count == 32, signingPublicKey.count == 32 else { throw WireError.badLength }
        try tlv(0x01, Array(nickname.utf8))
        try tlv(0x02, noisePublicKey)
        try tlv(0x03, signingPublicKey)
        if !neighbours.isEmpty {
            guard neighbours.allSatisfy({ $0.count == 8 }) else { throw WireError.badLength }
            try tlv(0x04, neighbours.flatMap { $0 })
        }
        if let capabilities { try tlv(0x05, capabilities.encoded()) }
        if let bridgeGeohash { try tlv(0x06, Array(bridgeGeohash.utf8)) }
        return out
    }

    package static func decode<C: Collection>(_ input: C) throws -> Announce where C.Element == UInt8 {
        let bytes = Array(input)
        var reader = ByteReader(bytes)
        var nickname: String?
        var noiseKey: [UInt8]?
        var signingKey: [UInt8]?
        var neighbours: [[UInt8]] = []
        var capabilities: Capabilities?
        var geohash: String?
        // iOS stops at a lone trailing byte (too short for a TLV header) instead of refusing the announce.
        while reader.remaining >= 2 {
            let tag = try reader.byte()
            let length = Int(try reader.byte())
            let value = try reader.take(length)
            switch tag {
            case 0x01: nickname = String(decoding: value, as: UTF8.self)
            case 0x02:
                guard length == 32 else { throw WireError.badLength }
                noiseKey = Array(value)
            case 0x03:
                guard length == 32 else { throw WireError.badLength }
                signingKey = Array(value)
            case 0x04:
                guard length > 0, length % 8 == 0 else { continue }
                neighbours = stride(from: 0, to: length, by: 8).map { Array(value.dropFirst($0).prefix(8)) }
            case 0x05: capabilities = Capabilities.decodeLenient(value)
            case 0x06: geohash = String(decoding: value, as: UTF8.self)
            default: continue
            }
        }
        guard let nickname, let noiseKey, let signingKey else { throw WireError.missingField }
        return Announce(nickname: nickname, noisePublicKey: noiseKey, signingPublicKey: signingKey, neighbours: neighbours,
                        capabilities: capabilities, bridgeGeohash: geohash)
    }
}
