/// BitchatPacket: the frame every BLE hop carries (versions 1 and 2, reference: mesh-media.md).
///
/// Layout: version, type, TTL, timestamp (ms, 8), flags, payload length (2 in v1, 4 in v2), sender id (8),
/// recipient id (8, if flagged), route (v2 only, if flagged: count + 8 bytes per hop, not in the payload
/// length), payload (when compressed: the original size, 2 bytes in v1 / 4 in v2, then raw DEFLATE), and a
/// 64-byte Ed25519 signature (if flagged). Encoding compresses (zlib level 5, as iOS) when the clients would and
/// pads with PKCS#7 to a 256/512/1024/2048 block only the frames iOS pads (Noise handshake and transport); decoding
/// tries the bytes as they are, then with the padding removed.
///
/// A decoded packet remembers its body as received (`receivedBody`): encoding it again, and its signing preimage,
/// use those bytes — compressed or not — rather than recompressing, so a signature made over another encoder's
/// DEFLATE output verifies. Changing `payload` forgets them.
package struct BitchatPacket: Equatable, Sendable {
    /// The payload's form on the wire as it was received.
    package enum ReceivedBody: Equatable, Sendable {
        /// Sent uncompressed (whatever this node's encoder would choose).
        case plain
        /// Sent compressed: the raw DEFLATE bytes exactly as received (they inflate to the payload).
        case compressed([UInt8])
    }

    package enum MessageType: UInt8, Sendable {
        case announce = 0x01, message = 0x02, leave = 0x03
        case noiseHandshake = 0x10, noiseEncrypted = 0x11
        case fragment = 0x20, requestSync = 0x21, fileTransfer = 0x22
    }

    package struct Flags: OptionSet, Sendable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        package static let hasRecipient = Flags(rawValue: 0x01)
        package static let hasSignature = Flags(rawValue: 0x02)
        package static let isCompressed = Flags(rawValue: 0x04)
        package static let hasRoute = Flags(rawValue: 0x08)
        package static let isRSR = Flags(rawValue: 0x10)
    }

    package static let idCount = 8
    package static let signatureCount = 64
    /// The BLE MTU the fragment planner assumes.
    package static let mtu = 512

    package var version: UInt8
    /// The raw type byte (unknown types decode; the node ignores them).
    package var type: UInt8
    package var ttl: UInt8
    package var timestamp: UInt64
    package var senderID: [UInt8]
    package var recipientID: [UInt8]?
    /// Source route hops (v2 only).
    package var route: [[UInt8]]
    package var payload: [UInt8] { didSet { receivedBody = nil } }
    /// How the payload was carried when this packet was decoded; nil for a packet built here.
    public internal(set) var receivedBody: ReceivedBody?
    package var signature: [UInt8]?
    package var isRSR: Bool

    package init(version: UInt8 = 1, type: MessageType, ttl: UInt8, timestamp: UInt64, senderID: [UInt8], recipientID: [UInt8]? = nil,
                route: [[UInt8]] = [], payload: [UInt8], signature: [UInt8]? = nil, isRSR: Bool = false) {
        self.init(version: version, rawType: type.rawValue, ttl: ttl, timestamp: timestamp, senderID: senderID, recipientID: recipientID,
                  route: route, payload: payload, signature: signature, isRSR: isRSR)
    }

    package init(version: UInt8, rawType: UInt8, ttl: UInt8, timestamp: UInt64, senderID: [UInt8], recipientID: [UInt8]?,
                route: [[UInt8]], payload: [UInt8], signature: [UInt8]?, isRSR: Bool) {
        self.version = version
        self.type = rawType
        self.ttl = ttl
        self.timestamp = timestamp
        self.senderID = senderID
        self.recipientID = recipientID
        self.route = route
        self.payload = payload
        self.signature = signature
        self.isRSR = isRSR
    }

    package var messageType: MessageType? { MessageType(rawValue: type) }

    /// Equal packets carry the same fields; how a payload was compressed on the wire does not count.
    package static func == (lhs: BitchatPacket, rhs: BitchatPacket) -> Bool {
        lhs.version == rhs.version && lhs.type == rhs.type && lhs.ttl == rhs.ttl && lhs.timestamp == rhs.timestamp
            && lhs.senderID == rhs.senderID && lhs.recipientID == rhs.recipientID && lhs.route == rhs.route
            && lhs.payload == rhs.payload && lhs.signature == rhs.signature && lhs.isRSR == rhs.isRSR
    }

    /// Whether iOS pads this frame on BLE: only Noise handshake and transport frames.
    package var isPaddedOnAir: Bool { type == MessageType.noiseHandshake.rawValue || type == MessageType.noiseEncrypted.rawValue }

    // MARK: Encoding

    /// The wire bytes: the body as received, else compressed when worthwhile; padded when `padding`, by default
    /// as iOS sends (`isPaddedOnAir`).
    package func encoded(padding: Bool? = nil) throws -> [UInt8] {
        guard version == 1 || version == 2 else { throw WireError.unsupportedVersion }
        guard senderID.count == Self.idCount else { throw WireError.badLength }
        let maxPayload = version == 1 ? Int(UInt16.max) : Int(UInt32.max)

        var flags: Flags = []
        var body = payload
        if let compressed = compressedBody(maxPayload: maxPayload) {
            flags.insert(.isCompressed)
            var sized: [UInt8] = []
            if version == 1 { sized.appendBigEndian(UInt16(payload.count)) } else { sized.appendBigEndian(UInt32(payload.count)) }
            body = sized + compressed
        }
        guard body.count <= maxPayload else { throw WireError.unencodable }
        if let recipientID {
            guard recipientID.count == Self.idCount else { throw WireError.badLength }
            flags.insert(.hasRecipient)
        }
        let routed = version >= 2 && !route.isEmpty
        if routed {
            guard route.count <= 255, route.allSatisfy({ $0.count == Self.idCount }) else { throw WireError.unencodable }
            flags.insert(.hasRoute)
        }
        if let signature {
            guard signature.count == Self.signatureCount else { throw WireError.badLength }
            flags.insert(.hasSignature)
        }
        if isRSR { flags.insert(.isRSR) }

        var out: [UInt8] = []
        out.reserveCapacity(16 + 16 + body.count + 64 + 9 * route.count + 256)
        out.append(version); out.append(type); out.append(ttl)
        out.appendBigEndian(timestamp)
        out.append(flags.rawValue)
        if version == 1 { out.appendBigEndian(UInt16(body.count)) } else { out.appendBigEndian(UInt32(body.count)) }
        out += senderID
        if let recipientID { out += recipientID }
        if routed {
            out.append(UInt8(route.count))
            for hop in route { out += hop }
        }
        out += body
        if let signature { out += signature }
        return (padding ?? isPaddedOnAir) ? Padding.pad(out) : out
    }

    /// The DEFLATE bytes to send: those received, else this node's own (level 5) when the clients would compress.
    private func compressedBody(maxPayload: Int) -> [UInt8]? {
        switch receivedBody {
        case .compressed(let bytes): return bytes
        case .plain: return nil
        case nil:
            guard Deflate.shouldCompress(payload), payload.count <= maxPayload, let compressed = Deflate.compress(payload),
                  compressed.count < payload.count else { return nil }
            return compressed
        }
    }

    /// What an Ed25519 signature covers: this packet without its signature, TTL 0, isRSR cleared, encoded with
    /// its body as received (or compressed as this node sends) and PKCS#7-padded, as iOS builds it.
    package func signingPreimage() throws -> [UInt8] {
        var copy = self
        copy.signature = nil
        copy.ttl = 0
        copy.isRSR = false
        return try copy.encoded(padding: true)
    }

    // MARK: Decoding

    /// Decodes wire bytes: as given, then with PKCS#7 padding removed. Any input yields a packet or a `WireError`.
    package static func decode(_ bytes: [UInt8]) throws -> BitchatPacket {
        do {
            return try decodeCore(bytes[...])
        } catch let rawError as WireError {
            let unpadded = Padding.unpad(bytes)
            guard unpadded.count != bytes.count else { throw rawError }
            return try decodeCore(unpadded)
        }
    }

    static func decodeCore(_ bytes: ArraySlice<UInt8>) throws -> BitchatPacket {
        var reader = ByteReader(bytes)
        let version = try reader.byte()
        guard version == 1 || version == 2 else { throw WireError.unsupportedVersion }
        let type = try reader.byte()
        let ttl = try reader.byte()
        let timestamp = try reader.uint64()
        let flags = Flags(rawValue: try reader.byte())
        let payloadLength = version == 1 ? Int(try reader.uint16()) : Int(try reader.uint32())
        let senderID = Array(try reader.take(idCount))
        let recipientID = flags.contains(.hasRecipient) ? Array(try reader.take(idCount)) : nil
        var route: [[UInt8]] = []
        if version >= 2 && flags.contains(.hasRoute) {
            let count = Int(try reader.byte())
            guard reader.remaining >= count * idCount else { throw WireError.truncated }
            for _ in 0..<count { route.append(Array(try reader.take(idCount))) }
        }
        let body = try reader.take(payloadLength)
        let payload: [UInt8]
        let received: ReceivedBody
        if flags.contains(.isCompressed) {
            var inner = ByteReader(body)
            let originalSize = version == 1 ? Int(try inner.uint16()) : Int(try inner.uint32())
            let deflated = Array(inner.rest())
            payload = try Deflate.decompress(deflated, originalSize: originalSize)
            received = .compressed(deflated)
        } else {
            payload = Array(body)
            received = .plain
        }
        let signature = flags.contains(.hasSignature) ? Array(try reader.take(signatureCount)) : nil
        guard reader.isAtEnd else { throw WireError.trailingBytes }
        var packet = BitchatPacket(version: version, rawType: type, ttl: ttl, timestamp: timestamp, senderID: senderID,
                                   recipientID: recipientID, route: route, payload: payload, signature: signature,
                                   isRSR: flags.contains(.isRSR))
        packet.receivedBody = received
        return packet
    }
}

/// PKCS#7 padding to the smallest 256/512/1024/2048 block at least 16 bytes longer than the data,
/// applied only when at most 255 pad bytes are needed.
enum Padding {
    static let blockSizes = [256, 512, 1024, 2048]

    static func pad(_ data: [UInt8]) -> [UInt8] {
        guard let target = blockSizes.first(where: { data.count + 16 <= $0 }) else { return data }
        let needed = target - data.count
        guard needed > 0, needed <= 255 else { return data }
        return data + [UInt8](repeating: UInt8(needed), count: needed)
    }

    /// The data without valid PKCS#7 padding; unchanged when the tail is not valid padding.
    static func unpad(_ data: [UInt8]) -> ArraySlice<UInt8> {
        guard let last = data.last, last > 0, Int(last) <= data.count else { return data[...] }
        let count = Int(last)
        guard data.suffix(count).allSatisfy({ $0 == last }) else { return data[...] }
        return data.prefix(data.count - count)
    }
}
