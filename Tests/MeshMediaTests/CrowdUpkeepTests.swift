import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// What a hostile crowd leaves behind, and what one pass with a far clock leaves: replays outside the clock
/// window, spoofed handshake openers, throwaway identities and future times, all heard through `job mesh exchange`
/// and handled by the real passes (`media-inbox`, `media-outbox`, `maintain-store`).
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct CrowdUpkeepTests {
    static let pair = MeshLab.bidirectional([("a", "b")])

    /// Puts `frames` on `radio`'s air and carries them to `node`; returns `node`'s inbox pass.
    func hear(_ lab: MeshLab, _ frames: [[UInt8]], via radio: String = "x", at node: String = "b") throws -> [String: Int] {
        let db = try lab.database(radio)
        try db.write { db in
            for frame in frames { _ = try db.execute("INSERT INTO mesh_outbox (frame, created_at) VALUES (?, ?)", [frame, lab.clock]) }
        }
        try lab.exchange(radio, node)
        return try lab.pass(node, "media-inbox")
    }

    func count(_ lab: MeshLab, _ node: String, _ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws -> Int {
        try lab.database(node).scalar(sql, arguments) ?? -1
    }

    /// A legacy file a signs for b at `timestamp`, as one frame.
    func legacyFrame(_ lab: MeshLab, content: [UInt8], timestamp: Int64) throws -> [UInt8] {
        let key = try lab.meshNode("a").identity.signing
        return try HandBuilt.legacyFrame(sender: try Hex.decode(lab.id("a")), recipient: try Hex.decode(lab.id("b")), timestamp: UInt64(timestamp),
                                         payload: HandBuilt.filePacket(content), deflated: nil, sign: { try key.sign($0) })
    }

    @Test func aCapturedLegacyFrameReplayedADayLaterAfterItsFileWasDeletedIsRefusedAsStale() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("x")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let content = MeshLab.random(300)
        let captured = try legacyFrame(lab, content: content, timestamp: lab.clock)
        #expect(try hear(lab, [captured])["delivered_legacy"] == 1)
        let files = try JSONSerialization.jsonObject(with: Data(try lab.job("b", ["mesh", "files", "list"], json: true).stdout.utf8)) as? [[String: Any]]
        let id = try #require(files?.first?["id"] as? String)
        try lab.job("b", ["mesh", "files", "delete", id])
        #expect(lab.delivered("b").isEmpty)

        // Replayed a minute later: a duplicate. Replayed 25 h later, past the hashes' day: stale, not delivered again.
        lab.clock += 60_000
        #expect(try hear(lab, [captured])["duplicate"] == 1)
        lab.clock += 25 * 3_600_000
        let replay = try hear(lab, [captured])
        #expect(replay["rejected_stale"] == 1)
        #expect(replay["delivered_legacy"] == nil)
        #expect(lab.delivered("b").isEmpty)

        // The window is 120 s either way of the receiver's clock (a announces again: b forgot it after a silent day).
        try lab.job("a", ["mesh", "announce"])
        #expect(try lab.deliver("a", to: "b")["announce_verified"] == 1)
        let late = try legacyFrame(lab, content: MeshLab.random(200), timestamp: lab.clock - 121_000)
        let early = try legacyFrame(lab, content: MeshLab.random(200), timestamp: lab.clock + 121_000)
        let inside = MeshLab.random(200)
        let edge = try legacyFrame(lab, content: inside, timestamp: lab.clock - 119_000)
        let counts = try hear(lab, [late, early, edge])
        #expect(counts["rejected_stale"] == 2 && counts["delivered_legacy"] == 1)
        #expect(Array(lab.delivered("b").values).map { $0 == inside } == [true])
    }

    /// A first handshake message from a fresh spoofed id.
    func opener(_ lab: MeshLab) throws -> [UInt8] {
        try BitchatPacket(type: .noiseHandshake, ttl: 7, timestamp: UInt64(lab.clock), senderID: MeshLab.random(8),
                          recipientID: try Hex.decode(lab.id("b")), payload: MeshLab.random(32)).encoded()
    }

    /// A correctly signed announce of a throwaway identity.
    func throwawayAnnounce(_ lab: MeshLab) throws -> [UInt8] {
        let noise = MeshLab.random(32)
        let signing = try Ed25519PrivateKey.generate()
        let announce = Announce(nickname: "t", noisePublicKey: noise, signingPublicKey: signing.publicKey, capabilities: .privateMedia)
        var packet = BitchatPacket(type: .announce, ttl: 1, timestamp: UInt64(lab.clock), senderID: NodeIdentity.peerID(noiseKey: noise),
                                   payload: try announce.encoded())
        packet.signature = try signing.sign(try packet.signingPreimage())
        return try packet.encoded()
    }

    @Test func spoofedOpenersAndThrowawayIdentitiesLeaveNothingBehind() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("x")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let repliesBefore = try count(lab, "b", "SELECT count(*) FROM mesh_outbox")

        // 200 openers from 200 unknown ids: 32 a minute are answered, the rest leave nothing.
        let openers = try hear(lab, try (0..<200).map { _ in try opener(lab) })
        #expect(openers["handshake_step"] == InboxProcessor.strangerHandshakesPerMinute)
        #expect(openers["handshake_throttled"] == 200 - InboxProcessor.strangerHandshakesPerMinute)
        #expect(try count(lab, "b", "SELECT count(*) FROM mesh_sessions") == InboxProcessor.strangerHandshakesPerMinute)
        let replies = try count(lab, "b", "SELECT count(*) FROM mesh_outbox WHERE expires_at <= ?", [lab.clock + InboxProcessor.strangerReplyLifetimeMilliseconds])
        #expect(replies == InboxProcessor.strangerHandshakesPerMinute)
        #expect(try count(lab, "b", "SELECT count(*) FROM mesh_outbox") == repliesBefore + replies)
        // 300 correctly signed announces of throwaway identities.
        let heard = lab.clock
        #expect(try hear(lab, try (0..<300).map { _ in try throwawayAnnounce(lab) })["announce_verified"] == 300)
        #expect(try count(lab, "b", "SELECT count(*) FROM mesh_peers") == 301)

        // Five minutes on the replies are off the air; ten minutes on the half-open sessions are gone.
        lab.clock += InboxProcessor.strangerReplyLifetimeMilliseconds + 1
        #expect(try lab.pass("b", "media-outbox")["expired_frames"] == replies)
        lab.clock += MeshUpkeep.halfOpenLifetimeMilliseconds
        #expect(try lab.pass("b", "media-inbox")["half_open_sessions_pruned"] == InboxProcessor.strangerHandshakesPerMinute)
        #expect(try count(lab, "b", "SELECT count(*) FROM mesh_sessions") == 0)

        // A day on, maintain-store forgets the identities that never announced again; a, which did, stays.
        lab.clock = heard + MeshUpkeep.unauthenticatedPeerLifetimeMilliseconds - 60_000
        try lab.job("a", ["mesh", "announce"])
        #expect(try lab.deliver("a", to: "b")["announce_verified"] == 1)
        #expect(try count(lab, "b", "SELECT count(*) FROM mesh_peers") == 301)
        lab.clock += 120_000
        let maintained = try lab.job("b", ["maintain-store"], json: true).jsonObject()["counts"] as? [String: Int] ?? [:]
        #expect(maintained["unauthenticated_peers_pruned"] == 300)
        #expect(try count(lab, "b", "SELECT count(*) FROM mesh_peers") == 1)
        #expect(try lab.peer("b", sees: "a") != nil)
    }

    @Test func aSpoofedOpenerBetweenTheSecondAndThirdMessagesDoesNotEndTheHandshake() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("m")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let content = MeshLab.random(700)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("f.bin", content)])
        #expect(try lab.pass("a", "media-outbox")["waiting"] == 1)          // message 1
        try lab.exchange("a", "b")
        #expect(try lab.pass("b", "media-inbox")["handshake_step"] == 1)    // message 2
        try lab.exchange("b", "a")
        _ = try lab.pass("a", "media-inbox")                                 // message 3 goes out
        // m sends a first message under a's id before b hears message 3.
        let spoof = BitchatPacket(type: .noiseHandshake, ttl: 7, timestamp: UInt64(lab.clock), senderID: try Hex.decode(lab.id("a")),
                                  recipientID: try Hex.decode(lab.id("b")), payload: MeshLab.random(32))
        try lab.broadcast(from: "m", [spoof])
        #expect(try lab.deliver("m", to: "b")["handshake_step"] == 1)
        try lab.exchange("a", "b")
        let third = try lab.pass("b", "media-inbox")
        #expect(third["handshake_failed"] == nil)
        #expect(third["session_established"] == 1)
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 4)
        #expect(totals["b"]?["delivered_encrypted"] == 1)
        #expect(Array(lab.delivered("b").values).map { $0 == content } == [true])
    }

    @Test func aPassRunAYearAheadLeavesNoTimeThatOutlivesItsRetentionAtTheRealClock() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("c", emulate: "older-client"); try lab.initNode("x")
        try lab.announceAll(["a", "c"], links: MeshLab.bidirectional([("a", "c")]))
        let year: Int64 = 365 * 86_400_000
        lab.clock += year
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("f.txt", MeshLab.random(2_000)), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        let plaintext = try count(lab, "a", "SELECT count(*) FROM mesh_outbox WHERE handover_to IS NOT NULL")
        #expect(plaintext > 1)
        let fragment = Fragment(fragmentID: MeshLab.random(8), index: 0, total: 2, originalType: BitchatPacket.MessageType.fileTransfer.rawValue,
                                data: MeshLab.random(40))
        let spoofed = try BitchatPacket(type: .fragment, ttl: 7, timestamp: UInt64(lab.clock), senderID: MeshLab.random(8),
                                        recipientID: try Hex.decode(lab.id("c")), payload: try fragment.encoded()).encoded()
        #expect(try hear(lab, [spoofed], at: "c")["fragment_stored"] == 1)

        // Back at the real clock: the times are repaired, and 31 s later nothing of the far pass is left.
        lab.clock -= year
        #expect(try lab.pass("a", "media-outbox")["future_times_repaired"] ?? 0 >= plaintext)
        #expect(try lab.pass("c", "media-inbox")["future_times_repaired"] ?? 0 >= 1)
        lab.clock += OutboxRetention.legacyWindowMilliseconds + 1_000
        #expect(try lab.pass("a", "media-outbox")["expired_frames"] ?? 0 >= plaintext)
        #expect(try count(lab, "a", "SELECT count(*) FROM mesh_outbox WHERE handover_to IS NOT NULL") == 0)
        #expect(try lab.pass("c", "media-inbox")["fragments_expired"] == 1)
        #expect(try count(lab, "c", "SELECT count(*) FROM mesh_fragment_sets") == 0)
        #expect(try count(lab, "a", "SELECT count(*) FROM mesh_sends WHERE updated_at > ?", [lab.clock]) == 0)
    }

    @Test func privateFilesGoOutAsVersion2AsIOSSendsThem() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("c", emulate: "older-client")
        let links = MeshLab.bidirectional([("a", "b"), ("a", "c")])
        try lab.announceAll(["a", "b", "c"], links: links)
        let small = MeshLab.random(300), fragmented = MeshLab.random(2_000)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("s.bin", small)])
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("l.bin", fragmented), "--accept-unencrypted"])
        var legacyInner: [UInt8]?
        var encryptedVersions: [UInt8] = []
        let frames = { () throws -> [BitchatPacket] in
            try lab.database("a").query("SELECT frame FROM mesh_outbox").map { try BitchatPacket.decode(try $0.get(0, as: [UInt8].self)) }
        }
        var totals: [String: [String: Int]] = [:]
        // The legacy send goes out at once (no proof to wait for); its frames leave the outbox once carried.
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        for _ in 0..<6 {
            for packet in try frames() {
                if packet.messageType == .noiseEncrypted, packet.payload.count > small.count { encryptedVersions.append(packet.version) }
                if packet.messageType == .fragment, let fragment = try? Fragment.decode(packet.payload), fragment.index == 0,
                   fragment.originalType == BitchatPacket.MessageType.fileTransfer.rawValue {
                    legacyInner = fragment.data
                    #expect(packet.version == 1)   // fragments of an unrouted packet stay v1, as iOS cuts them
                }
            }
            for (node, counts) in try lab.pump(["a", "b", "c"], links: links, rounds: 1) { totals[node, default: [:]].merge(counts, uniquingKeysWith: +) }
        }
        #expect(!encryptedVersions.isEmpty && encryptedVersions.allSatisfy { $0 == 2 })
        #expect(legacyInner?.first == 2)
        #expect(totals["b"]?["delivered_encrypted"] == 1 && totals["c"]?["delivered_legacy"] == 1)
        #expect(lab.delivered("b").values.contains(small) && lab.delivered("c").values.contains(fragmented))
    }
}
