import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// A hostile crowd on the radio: spoofed fragments, sets and file TLVs heard beside a genuine fragmented file,
/// carried by the real `job mesh exchange` from an attacker's radio into the receiver's inbox and processed by the
/// real `media-inbox` pass. The genuine file (a legacy file iOS signed, built byte by byte) is delivered whatever
/// the crowd sends, as the iOS client's reassembly would deliver it.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct HostileCrowdTests {
    /// i (standing in for an iOS client) and b know each other from their announces; x is the hostile radio.
    func lab() throws -> MeshLab {
        let lab = MeshLab()
        try lab.initNode("i"); try lab.initNode("b"); try lab.initNode("x")
        try lab.announceAll(["i", "b"], links: MeshLab.bidirectional([("i", "b")]))
        return lab
    }

    /// The fragment frames of a legacy file i signs for b (content of `count` bytes, several fragments).
    func genuineFragments(_ lab: MeshLab, content: [UInt8], filePacket: [UInt8]? = nil) throws -> [[UInt8]] {
        let sender = try Hex.decode(lab.id("i")), recipient = try Hex.decode(lab.id("b"))
        let key = try lab.meshNode("i").identity.signing
        let frame = try HandBuilt.legacyFrame(sender: sender, recipient: recipient, timestamp: UInt64(lab.clock),
                                              payload: filePacket ?? HandBuilt.filePacket(content), deflated: nil, sign: { try key.sign($0) })
        return HandBuilt.fragments(of: frame, sender: sender, recipient: recipient, timestamp: UInt64(lab.clock))
    }

    /// A fragment frame from `sender` to b: set `id`, `index` of `total`, `data`.
    func spoofedFragment(_ lab: MeshLab, sender: [UInt8], id: [UInt8], index: Int, total: Int, data: [UInt8]) throws -> [UInt8] {
        let fragment = Fragment(fragmentID: id, index: UInt16(index), total: UInt16(total),
                                originalType: BitchatPacket.MessageType.fileTransfer.rawValue, data: data)
        return try BitchatPacket(type: .fragment, ttl: 7, timestamp: UInt64(lab.clock), senderID: sender,
                                 recipientID: try Hex.decode(lab.id("b")), payload: try fragment.encoded()).encoded(padding: false)
    }

    /// Puts `frames` on x's radio in this order and carries them to b; returns b's inbox pass.
    func hear(_ lab: MeshLab, _ frames: [[UInt8]]) throws -> [String: Int] {
        let db = try lab.database("x")
        try db.write { db in
            for frame in frames { _ = try db.execute("INSERT INTO mesh_outbox (frame, created_at) VALUES (?, ?)", [frame, lab.clock]) }
        }
        #expect(try lab.exchange("x", "b") == frames.count)
        return try lab.pass("b", "media-inbox")
    }

    @Test func twoHundredSpoofedOneFragmentSetsDoNotLockAGenuineFragmentedFileOut() throws {
        let lab = try lab()
        let content = MeshLab.random(2_000)
        let genuine = try genuineFragments(lab, content: content)
        #expect(genuine.count > 3)
        // 200 sets from 200 spoofed ids, each one fragment of two (83-byte frames): more than the 128 sets in progress.
        let crowd = try (0..<200).map { _ in
            try spoofedFragment(lab, sender: MeshLab.random(8), id: MeshLab.random(8), index: 0, total: 2, data: MeshLab.random(40))
        }
        #expect(crowd[0].count == 83)
        let counts = try hear(lab, crowd + genuine)
        #expect(counts["delivered_legacy"] == 1)
        #expect(counts["fragment_rejected"] == nil)
        #expect(counts["fragment_set_evicted"] == 200 + 1 - Reassembly.maxSets)
        #expect(Array(lab.delivered("b").values).map { $0 == content } == [true])
        // The file's set completed and left; the newest spoofed sets fill the rest.
        #expect((try lab.database("b").scalar("SELECT count(*) FROM mesh_fragment_sets") as Int?) == Reassembly.maxSets - 1)
    }

    @Test func oneSenderFloodingSetsBetweenAFilesFragmentsOnlyEvictsItsOwnSets() throws {
        let lab = try lab()
        let content = MeshLab.random(2_000)
        let genuine = try genuineFragments(lab, content: content)
        // The file's first fragment opens its set; then one spoofed id opens 300 sets, then the rest of the file.
        let flooder = MeshLab.random(8)
        let flood = try (0..<300).map { _ in try spoofedFragment(lab, sender: flooder, id: MeshLab.random(8), index: 0, total: 2, data: [1]) }
        let counts = try hear(lab, [genuine[0]] + flood + genuine.dropFirst())
        #expect(counts["delivered_legacy"] == 1)
        #expect(Array(lab.delivered("b").values).map { $0 == content } == [true])
        // Above its fair share (128 over 2 senders while the file was in progress), the flooder evicted only its own sets.
        #expect(counts["fragment_set_evicted"] == 1 + 300 - Reassembly.maxSets)
        let held: Int = try lab.database("b").scalar("SELECT count(*) FROM mesh_fragment_sets WHERE sender = ?", [flooder]) ?? -1
        #expect(held == Reassembly.maxSets - 1)
    }

    @Test func aSameIndexCopyHeardFirstIsReplacedByTheLastAndAnotherTotalDoesNotDropTheSet() throws {
        let lab = try lab()
        let content = MeshLab.random(2_000)
        let genuine = try genuineFragments(lab, content: content)
        let sender = try Hex.decode(lab.id("i"))
        let setID: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]   // the hand-built fragments' set id
        // A spoofed copy of index 1 before the genuine one, and a 43-byte fragment of the same set with another total.
        let early = try spoofedFragment(lab, sender: sender, id: setID, index: 1, total: genuine.count, data: MeshLab.random(469))
        let otherTotal = try spoofedFragment(lab, sender: sender, id: setID, index: 0, total: genuine.count + 5, data: [])
        #expect(otherTotal.count == 43)
        let counts = try hear(lab, [genuine[0], early, otherTotal] + genuine.dropFirst())
        #expect(counts["fragment_replaced"] == 1)
        #expect(counts["fragment_mismatched"] == 1)
        #expect(counts["rejected_forged"] == nil && counts["malformed"] == nil)
        #expect(counts["delivered_legacy"] == 1)
        #expect(Array(lab.delivered("b").values).map { $0 == content } == [true])
    }

    @Test func aFileSizeFieldOfAnyOtherLengthIsIgnoredAsIOSIgnoresIt() throws {
        let lab = try lab()
        var contents: [[UInt8]] = []
        var frames: [[UInt8]] = []
        for (offset, length) in [0, 2, 3, 5].enumerated() {
            let content = MeshLab.random(40 + offset)
            contents.append(content)
            let packet = [0x01] + HandBuilt.be16(5) + Array("f.txt".utf8) + [0x02] + HandBuilt.be16(length) + [UInt8](repeating: 7, count: length)
                + [0x04] + HandBuilt.be32(content.count) + content
            let sender = try Hex.decode(lab.id("i")), recipient = try Hex.decode(lab.id("b"))
            let key = try lab.meshNode("i").identity.signing
            frames.append(try HandBuilt.legacyFrame(sender: sender, recipient: recipient, timestamp: UInt64(lab.clock) + UInt64(offset),
                                                    payload: packet, deflated: nil, sign: { try key.sign($0) }))
        }
        let counts = try hear(lab, frames)
        #expect(counts["rejected_file"] == nil)
        #expect(counts["delivered_legacy"] == 4)
        #expect(Set(lab.delivered("b").values) == Set(contents))
        // The size stands in as the content length.
        let listed = try JSONSerialization.jsonObject(with: Data(try lab.job("b", ["mesh", "files", "list"], json: true).stdout.utf8)) as? [[String: Any]]
        #expect(Set(listed?.compactMap { $0["declared_size"] as? Int } ?? []) == Set(contents.map(\.count)))
    }

    @Test func aMebibyteLegacyFileInOverTwoThousandFragmentsIsReassembledWhole() throws {
        let lab = try lab()
        // A 1 MiB-class legacy file (a v2 packet) in ~2,240 fragments; what adding each one costs is measured by
        // `job-bench mesh-crowd`.
        let content = MeshLab.random(1_048_000)
        let node = try lab.meshNode("i")
        let packet = try node.signed(BitchatPacket(version: 2, type: .fileTransfer, ttl: 7, timestamp: UInt64(lab.clock),
                                                   senderID: try Hex.decode(lab.id("i")), recipientID: try Hex.decode(lab.id("b")),
                                                   payload: try FilePacket(fileName: "big.bin", mimeType: nil, content: content).encoded()))
        let genuine = try FragmentPlanner.frames(for: packet, fragmentID: MeshLab.random(8)).map { try $0.encoded() }
        #expect(genuine.count > 2_000)
        let counts = try hear(lab, genuine)
        #expect(counts["delivered_legacy"] == 1)
        #expect(lab.delivered("b").values.first.map { $0 == content } == true)
        #expect((try lab.database("b").scalar("SELECT count(*) FROM mesh_fragments") as Int?) == 0)
    }
}
