/// A fragment payload (packet type 0x20): fragment id (8), index (2), total (2), original type (1), data.
package struct Fragment: Equatable, Sendable {
    package static let headerCount = 13

    package var fragmentID: [UInt8]
    package var index: UInt16
    package var total: UInt16
    package var originalType: UInt8
    package var data: [UInt8]

    package init(fragmentID: [UInt8], index: UInt16, total: UInt16, originalType: UInt8, data: [UInt8]) {
        self.fragmentID = fragmentID
        self.index = index
        self.total = total
        self.originalType = originalType
        self.data = data
    }

    package func encoded() throws -> [UInt8] {
        guard fragmentID.count == 8 else { throw WireError.badLength }
        var out = fragmentID
        out.appendBigEndian(index)
        out.appendBigEndian(total)
        out.append(originalType)
        return out + data
    }

    /// Decodes a fragment payload; a zero total or an index at or past the total is `badLength`.
    package static func decode<C: Collection>(_ input: C) throws -> Fragment where C.Element == UInt8 {
        let bytes = Array(input)
        var reader = ByteReader(bytes)
        let id = Array(try reader.take(8))
        let index = try reader.uint16()
        let total = try reader.uint16()
        let type = try reader.byte()
        guard total > 0, index < total else { throw WireError.badLength }
        return Fragment(fragmentID: id, index: index, total: total, originalType: type, data: Array(reader.rest()))
    }
}

/// The route-aware BLE fragment planner: how a whole encoded packet is cut into fragment packets.
///
/// Chunk size is 469 bytes without a route; with a route, max(64, 512 − (16 + 8 + 8 + (1 + 8×hops) + 13 + 16)).
/// A packet whose encoding fits the 512-byte MTU goes as one frame.
package enum FragmentPlanner {
    /// The private-media v1 limit: a directed private-media plan above this many fragments fails.
    package static let maxPrivateMediaFragments = 256

    package static func chunkSize(routeHops: Int) -> Int {
        guard routeHops > 0 else { return 469 }
        return max(64, BitchatPacket.mtu - (16 + 8 + 8 + (1 + 8 * routeHops) + 13 + 16))
    }

    /// Fragments needed for an encoded packet of `encodedCount` bytes (0 when it goes as one frame).
    package static func fragmentCount(encodedCount: Int, routeHops: Int) -> Int {
        guard encodedCount > BitchatPacket.mtu else { return 0 }
        let chunk = chunkSize(routeHops: routeHops)
        return (encodedCount + chunk - 1) / chunk
    }

    /// The frames to put on the air for `packet`: itself when it fits, else its fragments (unsigned, type 0x20,
    /// same sender, recipient, timestamp and TTL; v1 unless the original is routed, then v2 with its route).
    package static func frames(for packet: BitchatPacket, fragmentID: [UInt8]) throws -> [BitchatPacket] {
        let encoded = try packet.encoded()
        let hops = packet.version >= 2 ? packet.route.count : 0
        let count = fragmentCount(encodedCount: encoded.count, routeHops: hops)
        guard count > 0 else { return [packet] }
        guard count <= Int(UInt16.max) else { throw WireError.tooLarge }
        let chunk = chunkSize(routeHops: hops)
        var frames: [BitchatPacket] = []
        frames.reserveCapacity(count)
        for index in 0..<count {
            let start = index * chunk
            let data = Array(encoded[start..<min(encoded.count, start + chunk)])
            let fragment = Fragment(fragmentID: fragmentID, index: UInt16(index), total: UInt16(count), originalType: packet.type, data: data)
            frames.append(BitchatPacket(version: hops > 0 ? 2 : 1, type: .fragment, ttl: packet.ttl, timestamp: packet.timestamp,
                                        senderID: packet.senderID, recipientID: packet.recipientID, route: hops > 0 ? packet.route : [],
                                        payload: try fragment.encoded()))
        }
        return frames
    }
}
