import Cryptography
import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// Compression, padding and leniency as the clients do it (reference: mesh-media.md): signatures verify over the
/// bytes as received, own frames compress at zlib level 5, relays forward what they heard, announces and fragments
/// go unpadded, and the announce shapes iOS accepts are accepted. Frames from "iOS" are built byte by byte
/// (`HandBuilt`), never with the module's encoder.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ClientBytesTests {
    /// i (standing in for an iOS client) and b, each knowing the other from its announce.
    func pair() throws -> MeshLab {
        let lab = MeshLab()
        try lab.initNode("i"); try lab.initNode("b")
        try lab.announceAll(["i", "b"], links: MeshLab.bidirectional([("i", "b")]))
        return lab
    }

    func put(_ lab: MeshLab, on node: String, _ frames: [[UInt8]]) throws {
        let db = try lab.database(node)
        for frame in frames { _ = try db.execute("INSERT INTO mesh_outbox (frame, created_at) VALUES (?, ?)", [frame, lab.clock]) }
    }

    func ids(_ lab: MeshLab, _ a: String, _ b: String) throws -> ([UInt8], [UInt8]) {
        (try Hex.decode(lab.id(a)), try Hex.decode(lab.id(b)))
    }

    func frames(_ lab: MeshLab, _ node: String) throws -> [[UInt8]] {
        try lab.database(node).query("SELECT frame FROM mesh_outbox ORDER BY rowid").map { try $0.get(0, as: [UInt8].self) }
    }

    @Test func aLegacyFileSignedByIOSOverLevel5DeflateBytesIsDeliveredNotRejectedAsForged() throws {
        let lab = try pair()
        let (sender, recipient) = try ids(lab, "i", "b")
        let content = HandBuilt.text(words: 255)
        let key = try lab.meshNode("i").identity.signing
        let frame = try HandBuilt.legacyFrame(sender: sender, recipient: recipient, timestamp: UInt64(lab.clock),
                                              payload: HandBuilt.filePacket(content), deflated: HandBuilt.level5Of255Words,
                                              sign: { try key.sign($0) })
        try put(lab, on: "i", HandBuilt.fragments(of: frame, sender: sender, recipient: recipient, timestamp: UInt64(lab.clock)))
        let counts = try lab.deliver("i", to: "b")
        #expect(counts["rejected_forged"] == nil)
        #expect(counts["delivered_legacy"] == 1)
        #expect(Array(lab.delivered("b").values) == [content])
    }

    @Test func aLegacyFileSentUncompressedIsVerifiedOverTheUncompressedBytesCompressibleOrNot() throws {
        let lab = try pair()
        let (sender, recipient) = try ids(lab, "i", "b")
        let key = try lab.meshNode("i").identity.signing
        let compressible = HandBuilt.text(words: 60)          // this node would have compressed it
        let incompressible = (0..<300).map { UInt8(($0 * 167 + 13) % 256) }
        var frames: [[UInt8]] = []
        for (offset, content) in [compressible, incompressible].enumerated() {
            frames.append(try HandBuilt.legacyFrame(sender: sender, recipient: recipient, timestamp: UInt64(lab.clock) + UInt64(offset),
                                                    payload: HandBuilt.filePacket(content), deflated: nil, sign: { try key.sign($0) }))
        }
        try put(lab, on: "i", frames)
        let counts = try lab.deliver("i", to: "b")
        #expect(counts["rejected_forged"] == nil)
        #expect(counts["delivered_legacy"] == 2)
        #expect(Set(lab.delivered("b").values) == [compressible, incompressible])
    }

    @Test func aForgedSignatureOverReceivedCompressedBytesIsStillRejected() throws {
        let lab = try pair()
        let (sender, recipient) = try ids(lab, "i", "b")
        let impostor = try Ed25519PrivateKey.generate()
        let frame = try HandBuilt.legacyFrame(sender: sender, recipient: recipient, timestamp: UInt64(lab.clock),
                                              payload: HandBuilt.filePacket(HandBuilt.text(words: 195)), deflated: HandBuilt.level1Of195Words,
                                              sign: { try impostor.sign($0) })
        try put(lab, on: "i", [frame])
        let counts = try lab.deliver("i", to: "b")
        #expect(counts["rejected_forged"] == 1)
        #expect(lab.delivered("b").isEmpty)
    }

    @Test func ownLegacyFramesCompressAtZlibLevel5AndTheirFragmentsGoUnpadded() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("c", emulate: "older-client")
        try lab.announceAll(["a", "c"], links: MeshLab.bidirectional([("a", "c")]))
        _ = try lab.database("a").execute("DELETE FROM mesh_outbox")
        let content = HandBuilt.text(words: 255)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--mime", "text/plain", lab.file("f.txt", content), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)

        let sent = try frames(lab, "a")
        #expect(sent.count == 2)
        var pieces: [(UInt16, [UInt8])] = []
        for frame in sent {
            let packet = try BitchatPacket.decode(frame)
            #expect(packet.messageType == .fragment)
            #expect(frame == (try packet.encoded(padding: false)))   // no PKCS#7 tail
            let fragment = try Fragment.decode(packet.payload)
            pieces.append((fragment.index, fragment.data))
        }
        #expect(sent.last.map { $0.count < 512 } == true)
        let whole = pieces.sorted { $0.0 < $1.0 }.flatMap { $0.1 }
        // A file packet goes as v2, as iOS sends it: header (16) + sender + recipient, then the original size (4) and
        // the DEFLATE bytes, then the signature.
        #expect(whole[0] == 2)
        #expect(whole[11] & 0x04 != 0)
        let bodyCount = whole[12..<16].reduce(0) { $0 << 8 | Int($1) }
        #expect(Array(whole[32..<36]) == HandBuilt.be32(HandBuilt.filePacket(content).count))
        #expect(Array(whole[36..<(32 + bodyCount)]) == HandBuilt.level5Of255Words)

        try lab.exchange("a", "c")
        #expect(try lab.pass("c", "media-inbox")["delivered_legacy"] == 1)
    }

    @Test func aRelayForwardsTheBytesItHeardWithOnlyTheTTLChangedAndTheFileStillVerifies() throws {
        let lab = MeshLab()
        try lab.initNode("i"); try lab.initNode("r"); try lab.initNode("c")
        let line = MeshLab.bidirectional([("i", "r"), ("r", "c")])
        try lab.announceAll(["i", "r", "c"], links: line, rounds: 3)
        for node in ["i", "r", "c"] { _ = try lab.database(node).execute("DELETE FROM mesh_outbox") }
        let (sender, recipient) = try ids(lab, "i", "c")
        let key = try lab.meshNode("i").identity.signing
        let content = HandBuilt.text(words: 195)
        let frame = try HandBuilt.legacyFrame(sender: sender, recipient: recipient, timestamp: UInt64(lab.clock),
                                              payload: HandBuilt.filePacket(content), deflated: HandBuilt.level1Of195Words,
                                              sign: { try key.sign($0) })
        try put(lab, on: "i", [frame])
        #expect(try lab.deliver("i", to: "r")["relayed"] == 1)

        let forwarded = try frames(lab, "r")
        #expect(forwarded.count == 1)
        var expected = frame
        expected[2] = 6
        #expect(forwarded.first == expected)   // same length, same DEFLATE bytes, no padding added

        let counts = try lab.deliver("r", to: "c")
        #expect(counts["rejected_forged"] == nil)
        #expect(counts["delivered_legacy"] == 1)
        #expect(Array(lab.delivered("c").values) == [content])
    }

    @Test func ownAnnouncesGoOutUnpadded() throws {
        let lab = MeshLab()
        try lab.initNode("a")
        try lab.job("a", ["mesh", "announce"])
        let sent = try frames(lab, "a")
        #expect(sent.count == 1)
        let packet = try BitchatPacket.decode(sent[0])
        #expect(packet.messageType == .announce)
        #expect(sent[0] == (try packet.encoded(padding: false)))
        #expect(sent[0].count == 14 + 8 + packet.payload.count + 64)
    }

    @Test func noiseHandshakeFramesAreStillPaddedAsIOSPadsThem() throws {
        let lab = try pair()
        _ = try lab.database("i").execute("DELETE FROM mesh_outbox")
        try lab.job("i", ["mesh", "send-file", "--to", lab.id("b"), lab.file("h.bin", MeshLab.random(200))])
        #expect(try lab.pass("i", "media-outbox")["waiting"] == 1)
        let handshakes = try frames(lab, "i").filter { try BitchatPacket.decode($0).messageType == .noiseHandshake }
        #expect(handshakes.count == 1)
        // Message 1 (a 32-byte ephemeral key) in a v1 directed frame is 62 bytes, padded to the 256-byte block.
        #expect(handshakes.first?.count == 256)
        #expect(handshakes.first.map { Int($0.last!) } == 256 - 62)
    }

    /// An announce of `node` with `payload` as its TLVs, signed with its real key, as frame bytes.
    func announce(_ lab: MeshLab, of node: String, payload: [UInt8]) throws -> [UInt8] {
        var packet = BitchatPacket(type: .announce, ttl: 7, timestamp: UInt64(lab.clock), senderID: try Hex.decode(lab.id(node)), payload: payload)
        packet.signature = try lab.meshNode(node).identity.signing.sign(try packet.signingPreimage())
        return try packet.encoded()
    }

    @Test func announcesWithASingleTrailingByteOrAnOddNeighboursTLVAreAcceptedAsIOSDoes() throws {
        let lab = MeshLab()
        try lab.initNode("i"); try lab.initNode("b")
        let tlvs: [UInt8] = [0x01, 0x01, 0x69] + [0x02, 0x20] + (try lab.noiseKey("i")) + [0x03, 0x20] + (try lab.signingKey("i"))
        try put(lab, on: "i", [try announce(lab, of: "i", payload: tlvs + [0x05, 0x02, 0x00, 0x01] + [0xee])])
        #expect(try lab.deliver("i", to: "b")["announce_verified"] == 1)
        #expect(try lab.peer("b", sees: "i") != nil)

        lab.clock += 1_000
        _ = try lab.database("i").execute("DELETE FROM mesh_outbox")
        try put(lab, on: "i", [try announce(lab, of: "i", payload: tlvs + [0x04, 0x05, 1, 2, 3, 4, 5])])
        #expect(try lab.deliver("i", to: "b")["announce_verified"] == 1)

        // Two trailing bytes are a truncated TLV: still refused.
        lab.clock += 1_000
        _ = try lab.database("i").execute("DELETE FROM mesh_outbox")
        try put(lab, on: "i", [try announce(lab, of: "i", payload: tlvs + [0x07, 0x05])])
        #expect(try lab.deliver("i", to: "b")["announce_rejected"] == 1)
    }
}
