import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// Hostile frames in a node's inbox: none can crash, stall or block `media-inbox`; the frames behind them are
/// processed and a poison frame is never seen again.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct PoisonFrameTests {
    /// A frame of fragments nested `depth` deep (each a one-fragment set of v2 fragment packets), built outside-in in
    /// linear time. `declared` is the original type each fragment claims (0x20 for an honest nest).
    static func nestedFragments(depth: Int, sender: [UInt8], recipient: [UInt8], declared: UInt8) throws -> [UInt8] {
        let innermost = try BitchatPacket(type: .message, ttl: 7, timestamp: 1, senderID: sender, recipientID: recipient,
                                          payload: Array("bottom".utf8)).encoded(padding: false)
        let perLevel = 16 + 8 + 8 + Fragment.headerCount
        var frame: [UInt8] = []
        frame.reserveCapacity(depth * perLevel + innermost.count)
        var generator = SystemRandomNumberGenerator()
        for level in 0..<depth {
            let payloadCount = Fragment.headerCount + (depth - level - 1) * perLevel + innermost.count
            frame += [2, BitchatPacket.MessageType.fragment.rawValue, 7]
            frame.appendBigEndian(UInt64(1))
            frame.append(BitchatPacket.Flags.hasRecipient.rawValue)
            frame.appendBigEndian(UInt32(payloadCount))
            frame += sender + recipient
            frame += (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }   // fragment id
            frame.appendBigEndian(UInt16(0)); frame.appendBigEndian(UInt16(1))
            frame.append(level == depth - 1 ? BitchatPacket.MessageType.message.rawValue : declared)
        }
        return frame + innermost
    }

    /// Puts `frame` in `node`'s inbox, as a hostile neighbour's radio would.
    static func hear(_ lab: MeshLab, _ node: String, _ frame: [UInt8]) throws {
        _ = try lab.database(node).execute("INSERT INTO mesh_inbox (frame, received_at) VALUES (?, ?)", [frame, lab.clock])
    }

    @Test func aFrameOfFragmentsNestedDeepIsRefusedQuicklyAndTheFrameBehindItIsProcessed() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        let b = try Hex.decode(lab.id("b"))
        let stranger = Array(repeating: UInt8(0x66), count: 8)
        let poison = try Self.nestedFragments(depth: 23_000, sender: stranger, recipient: b, declared: BitchatPacket.MessageType.fragment.rawValue)
        #expect(poison.count > 1_000_000)
        // The same depth whose outer fragment lies about what it carries: refused after one reassembly, not recursed.
        let liar = try Self.nestedFragments(depth: 2_000, sender: stranger, recipient: b, declared: BitchatPacket.MessageType.message.rawValue)
        try Self.hear(lab, "b", poison)
        try Self.hear(lab, "b", liar)
        // A genuine announce queued behind them.
        try lab.job("a", ["mesh", "announce"])
        #expect(try lab.exchange("a", "b") == 1)

        let started = Date()
        let counts = try lab.pass("b", "media-inbox")
        #expect(Date().timeIntervalSince(started) < 30)   // not stalled (the old code spent minutes, then crashed)
        #expect(counts["frames"] == 3)
        #expect(counts["rejected_nested"] == 1)
        #expect(counts["reassembled"] == 1 && counts["malformed"] == 1)
        #expect(counts["announce_verified"] == 1)
        #expect(try lab.peer("b", sees: "a") != nil)
        // Nothing of them is kept: no reassembly rows, an empty inbox, and the next pass sees nothing.
        let db = try lab.database("b")
        #expect((try db.scalar("SELECT count(*) FROM mesh_fragments") as Int?) == 0)
        #expect((try db.scalar("SELECT count(*) FROM mesh_inbox") as Int?) == 0)
        let again = try lab.pass("b", "media-inbox")
        #expect(again["frames"] == nil && again["rejected_nested"] == nil)
    }

    /// A broadcast frame from `sender` that `b` would relay, and a trigger in `b`'s store that refuses to queue any
    /// frame from that sender: processing that one frame throws, as an unforeseen failure would. (Frames never fail
    /// to encode again since relays forward the bytes as received, so the store stands in for the failure.)
    static func poisonFrame(sender: [UInt8], refusedBy db: Database) throws -> [UInt8] {
        _ = try db.execute("""
            CREATE TRIGGER poison BEFORE INSERT ON mesh_outbox WHEN substr(NEW.frame, 15, 8) = X'\(Hex.encode(sender))'
            BEGIN SELECT RAISE(ABORT, 'poison'); END
            """)
        return try BitchatPacket(type: .message, ttl: 7, timestamp: 5, senderID: sender, payload: Array("poison".utf8)).encoded()
    }

    @Test func aFrameThatMakesProcessingThrowIsQuarantinedAloneAndTheFramesBehindItAreProcessed() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        let poison = try Self.poisonFrame(sender: Array(repeating: 0x55, count: 8), refusedBy: try lab.database("b"))
        try Self.hear(lab, "b", poison)
        try lab.job("a", ["mesh", "announce"])
        try lab.exchange("a", "b")

        let result = try lab.job("b", ["media-inbox"], json: true).jsonObject()
        #expect(result["outcome"] as? String == "completed")
        let counts = result["counts"] as? [String: Int] ?? [:]
        #expect(counts["quarantined"] == 1)
        #expect(counts["announce_verified"] == 1)
        #expect(try lab.peer("b", sees: "a") != nil)
        let db = try lab.database("b")
        #expect((try db.scalar("SELECT count(*) FROM mesh_inbox") as Int?) == 0)
        let moved = try db.queryOne("SELECT frame, reason FROM mesh_inbox_quarantine")
        #expect(try moved?.get(0, as: [UInt8].self) == poison)
        #expect(try moved?.get(1, as: String.self) == "failed")
        // The next pass does not see it again; the dry run reports it set aside.
        #expect(try lab.pass("b", "media-inbox")["quarantined"] == nil)
        let dry = try lab.pass("b", "media-inbox", ["--dry-run"])
        #expect(dry["pending_frames"] == 0 && dry["quarantined_frames"] == 1)
        // Quarantined frames leave after a day; panic wipe would take them at once.
        lab.clock += InboxQuarantine.retentionMilliseconds + 1
        _ = try lab.pass("b", "media-inbox")
        #expect((try db.scalar("SELECT count(*) FROM mesh_inbox_quarantine") as Int?) == 0)
    }

    @Test func aFrameTwoPassesDiedOnIsQuarantinedUnprocessedAndItsBatchNeighboursAreProcessedAlone() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("c")
        try lab.job("a", ["mesh", "announce"])
        try lab.job("c", ["mesh", "announce"])
        try lab.exchange("a", "b")
        try lab.exchange("c", "b")
        // What two passes killed while processing a's announce alone leave behind (its batch's mark and two marks
        // alone), and c's announce that shared the killed batch (marked once).
        let db = try lab.database("b")
        _ = try db.execute("UPDATE mesh_inbox SET attempts = ? WHERE id = (SELECT min(id) FROM mesh_inbox)", [1 + 2 * InboxQuarantine.aloneMark])
        _ = try db.execute("UPDATE mesh_inbox SET attempts = 1 WHERE id = (SELECT max(id) FROM mesh_inbox)", [])
        let counts = try lab.pass("b", "media-inbox")
        #expect(counts["quarantined"] == 1 && counts["announce_verified"] == 1)
        #expect(try lab.peer("b", sees: "a") == nil)
        #expect(try lab.peer("b", sees: "c") != nil)
        #expect((try db.scalar("SELECT reason FROM mesh_inbox_quarantine") as String?) == "interrupted")
        #expect((try db.scalar("SELECT count(*) FROM mesh_inbox") as Int?) == 0)
    }

    @Test func aFrameLargerThanAnyPacketAndASetDeclaringTooManyFragmentsAreRefused() throws {
        let lab = MeshLab()
        try lab.initNode("b")
        let b = try Hex.decode(lab.id("b"))
        let stranger = Array(repeating: UInt8(0x44), count: 8)
        let huge = BitchatPacket(version: 2, type: .message, ttl: 7, timestamp: 9, senderID: stranger, recipientID: b,
                                 payload: MeshLab.random(InboxProcessor.maxFrameBytes))
        try Self.hear(lab, "b", try huge.encoded())
        let many = Fragment(fragmentID: Array(repeating: 1, count: 8), index: 0, total: UInt16(Reassembly.maxFragments + 1),
                            originalType: BitchatPacket.MessageType.message.rawValue, data: [1, 2, 3])
        try Self.hear(lab, "b", try BitchatPacket(type: .fragment, ttl: 7, timestamp: 10, senderID: stranger, recipientID: b,
                                                  payload: try many.encoded()).encoded())
        let counts = try lab.pass("b", "media-inbox")
        #expect(counts["rejected_oversize"] == 1 && counts["fragment_rejected"] == 1)
        #expect((try lab.database("b").scalar("SELECT count(*) FROM mesh_fragments") as Int?) == 0)
    }
}
