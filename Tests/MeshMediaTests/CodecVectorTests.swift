import Testing
@testable import MeshMedia

/// Every vector in docs/protocols/mesh-wire.md, byte for byte.
@Suite(.timeLimit(.minutes(15))) struct CodecVectorTests {
    @Test func filePacketEncodesTheCanonicalVectorAndDecodesItBack() throws {
        let packet = FilePacket(fileName: "a", fileSize: 2, mimeType: "m", content: V.h("dead"))
        #expect(V.hex(try packet.encoded()) == "01000161020004000000020300016d0400000002dead")
        #expect(try FilePacket.decode(V.h("01000161020004000000020300016d0400000002dead")) == packet)
    }

    @Test func truncatedFilePacketIsRejected() {
        #expect(throws: WireError.truncated) { _ = try FilePacket.decode(V.h("010001610400000002de")) }
    }

    @Test func noisePlaintextOfAFileCarriesThe0x20TypeByte() throws {
        let file = FilePacket(fileName: "a.txt", fileSize: 3, mimeType: "text/plain", content: [1, 2, 3])
        let plaintext = NoisePayload(kind: .privateFile, body: try file.encoded()).encoded()
        #expect(V.hex(plaintext) == "20010005612e7478740200040000000303000a746578742f706c61696e0400000003010203")
        let decoded = try NoisePayload.decode(plaintext)
        #expect(try FilePacket.decode(decoded.body) == file)
    }

    @Test func legacyEightByteSizeIsAccepted() throws {
        let packet = try FilePacket.decode(V.h("02 0008 0000000000000100 04 00000004 01020304"))
        #expect(packet.fileSize == 256)
        #expect(packet.content == [1, 2, 3, 4])
    }

    @Test func missingSizeMeansContentLengthAndUnknownTagsAreSkipped() throws {
        #expect(try FilePacket.decode(V.h("04 00000003 aabbcc")).fileSize == 3)
        let withUnknown = try FilePacket.decode(V.h("7f 0004 11111111 04 00000003 aabbcc 05 0001 ff 7f 0004 11111111"))
        #expect(withUnknown.content == V.h("aabbcc"))
        #expect(withUnknown.fileName == nil)
    }

    @Test func repeatedContentConcatenatesAndEmptyOrOversizedIsRejected() throws {
        #expect(try FilePacket.decode(V.h("04 00000001 aa 04 00000002 bbcc")).content == V.h("aabbcc"))
        #expect(throws: WireError.missingField) { _ = try FilePacket.decode(V.h("010001 61")) }
        #expect(throws: WireError.missingField) { _ = try FilePacket.decode(V.h("04 00000000")) }
        #expect(throws: WireError.tooLarge) { _ = try FilePacket.decode(V.h("02 0004 00100001 04 00000001 aa")) }
        let big = [0x04] + V.h("00100001") + V.rep(0, 1_048_577)
        #expect(throws: WireError.tooLarge) { _ = try FilePacket.decode(big) }
        let exact = [0x04] + V.h("00100000") + V.rep(7, 1_048_576)
        #expect(try FilePacket.decode(exact).content.count == 1_048_576)
    }

    @Test func contentFallsBackToATwoByteLengthWhenTheFourByteOneOverruns() throws {
        // 04 0002 aabb: the 4-byte length 0x0002aabb overruns, the 2-byte one fits.
        #expect(try FilePacket.decode(V.h("04 0002 aabb")).content == V.h("aabb"))
    }

    @Test func noisePayloadTypesAndTheAlias() throws {
        let alias = try NoisePayload.decode(V.h("09cafe"))
        #expect(alias.kind == .privateFile)
        #expect(alias.usedAlias)
        #expect(V.hex(alias.encoded()) == "20cafe")
        let table: [(UInt8, NoisePayload.Kind)] = [(0x01, .privateMessage), (0x02, .readReceipt), (0x03, .delivered), (0x08, .voiceFrame),
                                                   (0x10, .verifyChallenge), (0x11, .verifyResponse), (0x20, .privateFile), (0x21, .authenticatedPeerState)]
        for (byte, kind) in table {
            let payload = try NoisePayload.decode([byte, 0xaa])
            #expect(payload.kind == kind)
            #expect(payload.encoded() == [byte, 0xaa])
        }
        #expect(throws: WireError.unknownType) { try NoisePayload.decode([0x7e]) }
        #expect(throws: WireError.truncated) { try NoisePayload.decode([UInt8]()) }
    }

    @Test func packetV1MessageVector() throws {
        let packet = BitchatPacket(version: 1, type: .message, ttl: 7, timestamp: 0x0102030405060708,
                                   senderID: V.h("1011121314151617"), payload: V.h("aabbcc"))
        let wire = "01020701020304050607080000031011121314151617aabbcc"
        #expect(V.hex(try packet.encoded(padding: false)) == wire)
        #expect(try BitchatPacket.decode(V.h(wire)) == packet)
        // Padded (as iOS sends Noise frames): 25 bytes → 256-byte block, still decodes to the same packet.
        let padded = try packet.encoded(padding: true)
        #expect(padded.count == 256)
        #expect(padded.last == 231)
        #expect(try BitchatPacket.decode(padded) == packet)
    }

    @Test func packetV2RoutedSignedVector() throws {
        let wire = "021105000000000000002a0b00000002" + "0102030405060708" + "1112131415161718" + "02"
            + "2122232425262728" + "3132333435363738" + "dead" + String(repeating: "5a", count: 64)
        let packet = try BitchatPacket.decode(V.h(wire))
        #expect(packet.version == 2)
        #expect(packet.messageType == .noiseEncrypted)
        #expect(packet.ttl == 5)
        #expect(packet.timestamp == 42)
        #expect(packet.senderID == V.h("0102030405060708"))
        #expect(packet.recipientID == V.h("1112131415161718"))
        #expect(packet.route == [V.h("2122232425262728"), V.h("3132333435363738")])
        #expect(packet.payload == V.h("dead"))
        #expect(packet.signature == V.rep(0x5a, 64))
        #expect(V.hex(try packet.encoded(padding: false)) == wire)
    }

    @Test func v1IgnoresTheRouteFlagAndOtherVersionsAreRejected() throws {
        #expect(throws: WireError.unsupportedVersion) { _ = try BitchatPacket.decode(V.h("03020701020304050607080000031011121314151617aabbcc")) }
        #expect(throws: WireError.unsupportedVersion) { _ = try BitchatPacket.decode(V.h("00")) }
        // v1 with flag 0x08: no route is read.
        let packet = try BitchatPacket.decode(V.h("01020701020304050607080800031011121314151617aabbcc"))
        #expect(packet.route.isEmpty)
        #expect(packet.payload == V.h("aabbcc"))
    }

    @Test func compressionRoundTripsAndIsChosenLikeTheClients() throws {
        let text = Array(String(repeating: "hello mesh ", count: 40).utf8)
        for version: UInt8 in [1, 2] {
            let packet = BitchatPacket(version: version, type: .message, ttl: 3, timestamp: 9, senderID: V.rep(1, 8), payload: text)
            let wire = try packet.encoded(padding: false)
            #expect(wire[11] & 0x04 != 0)
            #expect(wire.count < text.count)
            #expect(try BitchatPacket.decode(wire) == packet)
        }
        // Below 100 bytes or high-entropy: never compressed.
        let small = BitchatPacket(type: .message, ttl: 3, timestamp: 9, senderID: V.rep(1, 8), payload: V.rep(0, 99))
        #expect(try small.encoded(padding: false)[11] & 0x04 == 0)
        let distinct = (0..<200).map { UInt8($0) }
        let spread = BitchatPacket(type: .message, ttl: 3, timestamp: 9, senderID: V.rep(1, 8), payload: distinct)
        #expect(try spread.encoded(padding: false)[11] & 0x04 == 0)
    }

    @Test func compressionBombsAndCorruptStreamsAreRefused() throws {
        // DEFLATE itself tops out near 1,032:1, so a real bomb is refused by the absolute bound…
        let zeros = V.rep(0, 3_000_000)
        let bomb = Deflate.compress(zeros)!
        #expect(zeros.count > Deflate.maxInflatedBytes)
        var header = V.h("02 01 07 0000000000000001 04")
        header.appendBigEndian(UInt32(bomb.count + 4))
        var body = V.rep(1, 8)
        body.appendBigEndian(UInt32(zeros.count))
        #expect(throws: WireError.badCompression) { _ = try BitchatPacket.decode(header + body + bomb) }
        // …and a claimed size above 50,000 × the compressed length before zlib is even called.
        // A v1 packet claiming 60,000 bytes from 1 byte of deflate.
        #expect(throws: WireError.badCompression) { _ = try BitchatPacket.decode(V.h("01 02 07 0000000000000001 04 0003 0101010101010101 ea60 03")) }
        // Claimed size differs from what the stream produces.
        let hello = Deflate.compress(Array("hello hello hello".utf8))!
        var wrong = V.h("01 02 07 0000000000000001 04")
        wrong.appendBigEndian(UInt16(hello.count + 2))
        wrong += V.rep(1, 8) + [0, 5] + hello
        #expect(throws: WireError.badCompression) { _ = try BitchatPacket.decode(wrong) }
    }

    @Test func paddingRules() {
        #expect(Padding.pad(V.rep(1, 240)).count == 256)
        #expect(Padding.pad(V.rep(1, 241)).count == 241)
        #expect(Padding.pad(V.rep(1, 100)).count == 256)   // 156 pad bytes
        #expect(Padding.pad(V.rep(1, 250)).count == 250)   // 512 would need 262 pad bytes
        #expect(Padding.pad(V.rep(1, 1000)).count == 1024)
        #expect(Padding.pad(V.rep(1, 2040)).count == 2040) // no block is 16 bytes longer
        #expect(Array(Padding.unpad(V.rep(1, 10) + [3, 3, 3])) == V.rep(1, 10))
        #expect(Array(Padding.unpad(V.rep(1, 10) + [3, 2, 3])).count == 13)
        #expect(Array(Padding.unpad([0])).count == 1)
    }

    @Test func signingPreimageClearsTTLSignatureAndRSRButKeepsEverythingElse() throws {
        let signed = BitchatPacket(version: 2, type: .fileTransfer, ttl: 7, timestamp: 77, senderID: V.rep(1, 8), recipientID: V.rep(2, 8),
                                   route: [V.rep(3, 8)], payload: V.h("aabb"), signature: V.rep(0x5a, 64), isRSR: true)
        let preimage = try signed.signingPreimage()
        let expected = BitchatPacket(version: 2, type: .fileTransfer, ttl: 0, timestamp: 77, senderID: V.rep(1, 8), recipientID: V.rep(2, 8),
                                     route: [V.rep(3, 8)], payload: V.h("aabb"))
        #expect(preimage == (try expected.encoded(padding: true)))
        #expect(preimage.count == 256)   // padded, as iOS builds the preimage
        #expect(preimage[2] == 0)
        #expect(preimage[11] == 0x09)    // hasRecipient | hasRoute only
        var relayed = signed
        relayed.ttl = 2
        relayed.isRSR = false
        #expect(try relayed.signingPreimage() == preimage)
    }

    @Test func fragmentVectorAndRules() throws {
        let fragment = try Fragment.decode(V.h("00010203040506070001000302aabb"))
        #expect(fragment.fragmentID == V.h("0001020304050607"))
        #expect(fragment.index == 1)
        #expect(fragment.total == 3)
        #expect(fragment.originalType == 2)
        #expect(fragment.data == V.h("aabb"))
        #expect(V.hex(try fragment.encoded()) == "00010203040506070001000302aabb")
        #expect(throws: WireError.truncated) { try Fragment.decode(V.h("000102030405060700010003")) }
        #expect(throws: WireError.badLength) { try Fragment.decode(V.h("00010203040506070003000302")) }
        #expect(throws: WireError.badLength) { try Fragment.decode(V.h("00010203040506070000000002")) }
    }

    @Test func fragmentChunkSizesFollowTheRoute() {
        #expect(FragmentPlanner.chunkSize(routeHops: 0) == 469)
        #expect(FragmentPlanner.chunkSize(routeHops: 1) == 512 - (16 + 8 + 8 + 9 + 13 + 16))
        #expect(FragmentPlanner.chunkSize(routeHops: 2) == 434)
        #expect(FragmentPlanner.chunkSize(routeHops: 50) == 64)
        #expect(FragmentPlanner.fragmentCount(encodedCount: 512, routeHops: 0) == 0)
        #expect(FragmentPlanner.fragmentCount(encodedCount: 513, routeHops: 0) == 2)
        #expect(FragmentPlanner.fragmentCount(encodedCount: 256 * 469, routeHops: 0) == 256)
        #expect(FragmentPlanner.fragmentCount(encodedCount: 256 * 469 + 1, routeHops: 0) == 257)
    }

    @Test func fragmentsCarryTheWholeSignedPacketAndKeepTheHeaderFields() throws {
        let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 3) }
        let original = BitchatPacket(version: 2, type: .fileTransfer, ttl: 6, timestamp: 1234, senderID: V.rep(1, 8), recipientID: V.rep(2, 8),
                                     payload: payload, signature: V.rep(9, 64))
        let frames = try FragmentPlanner.frames(for: original, fragmentID: V.rep(4, 8))
        let encoded = try original.encoded()
        #expect(frames.count == (encoded.count + 468) / 469)
        var joined: [UInt8] = []
        for (index, frame) in frames.enumerated() {
            #expect(frame.version == 1)
            #expect(frame.messageType == .fragment)
            #expect(frame.signature == nil)
            #expect(frame.ttl == 6 && frame.timestamp == 1234 && frame.senderID == original.senderID && frame.recipientID == original.recipientID)
            let wire = try frame.encoded()
            #expect(wire.count <= 512)
            let fragment = try Fragment.decode(try BitchatPacket.decode(wire).payload)
            #expect(Int(fragment.index) == index && Int(fragment.total) == frames.count && fragment.originalType == 0x22)
            joined += fragment.data
        }
        #expect(try BitchatPacket.decode(joined) == original)

        var routed = original
        routed.route = [V.rep(5, 8), V.rep(6, 8)]
        let routedFrames = try FragmentPlanner.frames(for: routed, fragmentID: V.rep(4, 8))
        #expect(routedFrames.allSatisfy { $0.version == 2 && $0.route == routed.route })
        #expect(try routedFrames.allSatisfy { try $0.encoded().count <= 512 })
    }

    @Test func capabilityVectors() throws {
        #expect(V.hex(Capabilities().encoded()) == "00")
        #expect(V.hex(Capabilities.prekeys.encoded()) == "01")
        #expect(V.hex(Capabilities.privateMedia.encoded()) == "0001")
        #expect(V.hex(Capabilities.privateMediaReceipts.encoded()) == "0002")
        #expect(V.hex(Capabilities(rawValue: 1 << 10).encoded()) == "0004")
        #expect(Capabilities.decodeLenient(V.h("0001")) == .privateMedia)
        #expect(Capabilities.decodeLenient(V.h("000100000000000000ff")) == .privateMedia)  // low 8 bytes only
        #expect(Capabilities(rawValue: UInt64.max).encoded().count == 8)
    }

    @Test func announceVector() throws {
        let wire = "0103626f62" + "0220" + String(repeating: "11", count: 32) + "0320" + String(repeating: "22", count: 32) + "05020001" + "7f02cafe"
        let announce = try Announce.decode(V.h(wire))
        #expect(announce.nickname == "bob")
        #expect(announce.noisePublicKey == V.rep(0x11, 32))
        #expect(announce.signingPublicKey == V.rep(0x22, 32))
        #expect(announce.capabilities == .privateMedia)
        #expect(V.hex(try announce.encoded()) == String(wire.dropLast(8)))
        let noCaps = try Announce.decode(V.h(String(wire.dropLast(16))))
        #expect(noCaps.capabilities == nil)
        #expect(throws: WireError.missingField) { try Announce.decode(V.h("0103626f62")) }
        #expect(throws: WireError.badLength) { try Announce.decode(V.h("0201aa")) }
    }

    @Test func authenticatedPeerStateRules() throws {
        let key = V.rep(0x22, 32)
        let state = PeerState(capabilities: .privateMedia, signingPublicKey: key)
        let wire = try state.encoded()
        #expect(wire == V.h("01 01020001 0220") + key)
        #expect(try PeerState.decode(wire) == state)
        #expect(try PeerState.decode(V.h("01 010100 0220") + key + V.h("7f01ff")).capabilities == [])
        #expect(throws: WireError.unsupportedVersion) { try PeerState.decode(V.h("02 010100 0220") + key) }
        #expect(throws: WireError.duplicateField) { try PeerState.decode(V.h("01 010100 010100 0220") + key) }
        #expect(throws: WireError.duplicateField) { try PeerState.decode(V.h("01 010100 0220") + key + V.h("0220") + key) }
        #expect(throws: WireError.missingField) { try PeerState.decode(V.h("01 010100")) }
        #expect(throws: WireError.missingField) { try PeerState.decode(V.h("01 0220") + key) }
        #expect(throws: WireError.badLength) { try PeerState.decode(V.h("01 0100 0220") + key) }
        #expect(throws: WireError.nonCanonical) { try PeerState.decode(V.h("01 01020100 0220") + key) }
        #expect(throws: WireError.badLength) { try PeerState.decode(V.h("01 0109010203040506070809 0220") + key) }
        #expect(throws: WireError.badLength) { try PeerState.decode(V.h("01 010100 021f") + V.rep(0x22, 31)) }
    }
}
