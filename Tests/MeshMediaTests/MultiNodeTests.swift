import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// Two and three nodes exchanging private files through `job mesh exchange`, one row of docs/protocols/mesh-wire.md ("Receiving") at a time.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct MultiNodeTests {
    static let pair = MeshLab.bidirectional([("a", "b")])

    /// Two nodes that announced to each other; a send from a to b then pumped until nothing is left to do.
    func sendAndPump(_ lab: MeshLab, from: String = "a", to: String = "b", content: [UInt8], consent: Bool = false,
                     links: [(String, String)] = pair, nodes: [String] = ["a", "b"], rounds: Int = 6) throws -> [String: [String: Int]] {
        let path = lab.file("report \(lab.clock).pdf", content)
        var args = ["mesh", "send-file", "--to", lab.id(to), path]
        if consent { args.append("--accept-unencrypted") }
        try lab.job(from, args)
        return try lab.pump(nodes, links: links, rounds: rounds)
    }

    @Test func currentClientsExchangeAnEncryptedFileAndPinEachOtherAnnounceThenSession() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        // A verified, capability-bearing announce alone never pins.
        #expect(try lab.peer("a", sees: "b")?["pinned"] as? Bool == false)
        #expect(try lab.peer("a", sees: "b")?["capabilities"] as? [String] == ["privateMedia"])

        let content = MeshLab.random(5_000)
        let totals = try sendAndPump(lab, content: content)
        #expect(totals["b"]?["delivered_encrypted"] == 1)
        #expect(totals["b"]?["delivered_alias"] == nil && totals["b"]?["delivered_legacy"] == nil)
        let delivered = lab.delivered("b")
        #expect(delivered.count == 1)
        #expect(delivered.values.first == content)
        // Named by the stable media id, never the sender's file name.
        #expect(delivered.keys.allSatisfy { $0.count == 64 && $0.allSatisfy(\.isHexDigit) })
        let send = try lab.sends("a")[0]
        #expect(send["status"] as? String == "carried" && send["form"] as? String == "encrypted")
        #expect(try lab.peer("a", sees: "b")?["pinned"] as? Bool == true)
        #expect(try lab.peer("b", sees: "a")?["pinned"] as? Bool == true)
        #expect(try lab.peer("a", sees: "b")?["session_proof"] as? String == "privateMedia")
        // Never both forms: nothing a put on the air is, or is a fragment of, a fileTransfer.
        let frames = try lab.database("a").query("SELECT frame FROM mesh_outbox").map { try BitchatPacket.decode(try $0.get(0, as: [UInt8].self)) }
        let types = frames.map { $0.messageType == .fragment ? (try? Fragment.decode($0.payload))?.originalType : $0.type }
        #expect(types.contains(BitchatPacket.MessageType.noiseEncrypted.rawValue))
        #expect(!types.contains(BitchatPacket.MessageType.fileTransfer.rawValue))
        #expect(totals["b"]?.keys.contains { $0.hasPrefix("rejected") } == false)
    }

    @Test func aReplayedFrameDeliversNothingNew() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        _ = try sendAndPump(lab, content: MeshLab.random(3_000))
        #expect(lab.delivered("b").count == 1)
        // Carry a's whole outbox to b again, as a replaying attacker would.
        _ = try lab.database("a").execute("DELETE FROM mesh_carried", [])
        #expect(try lab.exchange("a", "b") > 0)
        let counts = try lab.pass("b", "media-inbox")
        #expect(counts["duplicate", default: 0] > 0)
        #expect(counts["delivered_encrypted"] == nil)
        #expect(lab.delivered("b").count == 1)
    }

    @Test func prereleaseSenderUsesTheAliasAndTheReceiverCanonicalizesAndDelivers() throws {
        let lab = MeshLab()
        try lab.initNode("a", emulate: "prerelease-ios"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let content = MeshLab.random(2_000)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("draft.txt", content), "--mime", "text/plain"])
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 6)
        #expect(totals["b"]?["delivered_alias"] == 1)
        #expect(totals["b"]?["delivered_encrypted"] == nil)
        // Canonicalized: the media id is that of the file itself, whichever type byte carried it.
        let expected = try MediaInbox.mediaID(senderID: try Hex.decode(lab.id("a")),
                                              file: FilePacket(fileName: "draft.txt", mimeType: "text/plain", content: content))
        #expect(lab.delivered("b") == [expected: content])
    }

    @Test func olderClientSendsSignedLegacyWhichIsVerifiedAndDelivered() throws {
        let lab = MeshLab()
        try lab.initNode("a", emulate: "older-client"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        #expect(try lab.peer("b", sees: "a")?["capabilities_advertised"] as? Bool == false)
        let content = MeshLab.random(4_000)
        let totals = try sendAndPump(lab, content: content, consent: true)
        #expect(totals["b"]?["delivered_legacy"] == 1)
        #expect(lab.delivered("b").values.first == content)
        #expect(try lab.sends("a")[0]["form"] as? String == "legacy")
    }

    @Test func currentSenderFallsBackToSignedLegacyForAnUnpinnedOlderPeerOnlyWithConsentAndOnlyOnce() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b", emulate: "older-client")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let path = lab.file("notes.txt", MeshLab.random(1_000))
        let first = try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), path, "--accept-unencrypted"])
        #expect(first.stdout.contains("NOT end-to-end encrypted"))
        #expect(first.stdout.contains("relays can see"))
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 3)
        #expect(totals["b"]?["delivered_legacy"] == 1)
        // The consent was consumed by that send: the next send without it is blocked, visibly.
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), path])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 2)
        let sends = try lab.sends("a")
        #expect(sends[0]["status"] as? String == "carried" && sends[0]["form"] as? String == "legacy")
        #expect(sends[0]["consent_pending"] as? Bool == false)
        #expect(sends[1]["status"] as? String == "failed" && sends[1]["reason"] as? String == "needs-consent")
        #expect(lab.delivered("b").count == 1)
        let human = try lab.job("a", ["mesh", "sends"]).stdout
        #expect(human.contains("needs-consent"))
    }

    @Test func forgedUnsignedAndUnknownLegacySendersAreRejected() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let a = try Hex.decode(lab.id("a")), b = try Hex.decode(lab.id("b"))
        let file = try FilePacket(fileName: "x", mimeType: "text/plain", content: Array("forged".utf8)).encoded()
        let unsigned = BitchatPacket(type: .fileTransfer, ttl: 7, timestamp: UInt64(lab.clock) + 1, senderID: a, recipientID: b, payload: file)
        var forged = unsigned
        forged.timestamp = UInt64(lab.clock) + 2
        forged.signature = try Ed25519PrivateKey.generate().sign(try forged.signingPreimage())
        var stranger = BitchatPacket(type: .fileTransfer, ttl: 7, timestamp: UInt64(lab.clock) + 3, senderID: Array(repeating: 0x77, count: 8), recipientID: b, payload: file)
        stranger.signature = try Ed25519PrivateKey.generate().sign(try stranger.signingPreimage())
        var undirected = unsigned
        undirected.recipientID = nil
        undirected.timestamp = UInt64(lab.clock) + 4
        // A hostile radio puts them on the air next to a's node.
        let db = try lab.database("a")
        for packet in [unsigned, forged, stranger, undirected] {
            _ = try db.execute("INSERT INTO mesh_outbox (frame, created_at) VALUES (?, ?)", [try packet.encoded(), lab.clock])
        }
        try lab.exchange("a", "b")
        let counts = try lab.pass("b", "media-inbox")
        #expect(counts["rejected_unsigned"] == 1)
        #expect(counts["rejected_forged"] == 1)
        #expect(counts["rejected_unknown_sender"] == 1)
        #expect(counts["rejected_undirected"] == 1)
        #expect(lab.delivered("b").isEmpty)
    }

    @Test func sessionThenAnnouncePinsToo() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        // Only a announces: b learns a, a does not learn b yet (b's passes announce nothing for a day).
        try lab.job("b", ["settings", "set", "mesh.announce-interval-seconds", "86400"])
        _ = try lab.database("b").execute("UPDATE mesh_node SET announced_at = ?", [lab.clock])
        try lab.job("a", ["mesh", "announce"])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 1)
        #expect(try lab.peers("a").isEmpty)
        // b sends to a: a handshake completes on both sides, then the file goes encrypted.
        let totals = try sendAndPump(lab, from: "b", to: "a", content: MeshLab.random(800))
        #expect(totals["a"]?["delivered_encrypted"] == 1)
        // a knows b only from the session: b bound its signing key in its 0x21, but no announce, nothing to pin.
        let known = try lab.peer("a", sees: "b")
        #expect(known?["identity"] as? String == "authenticated" && known?["announced"] as? Bool == false)
        #expect(known?["pinned"] as? Bool == false && known?["capabilities_advertised"] as? Bool == false)
        // Now b's announce arrives: the session authenticated that very key first, so a pins on the announce.
        try lab.job("b", ["mesh", "announce"])
        let after = try lab.pump(["a", "b"], links: Self.pair, rounds: 1)
        #expect(after["a"]?["pinned"] == 1)
        #expect(try lab.peer("a", sees: "b")?["pinned"] as? Bool == true)
    }

    @Test func aPinnedPeerThatDowngradesIsBlockedEvenWithConsent() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        _ = try sendAndPump(lab, content: MeshLab.random(500))
        #expect(try lab.peer("a", sees: "b")?["pinned"] as? Bool == true)
        // b is reinstalled as an older build with the same keys; both apps restart, so no session survives.
        _ = try lab.database("b").execute("UPDATE mesh_node SET emulate = 'older-client'", [])
        for node in ["a", "b"] { _ = try lab.database(node).execute("DELETE FROM mesh_sessions", []) }
        try lab.job("b", ["mesh", "announce"])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 1)
        #expect(try lab.peer("a", sees: "b")?["capabilities_advertised"] as? Bool == false)
        #expect(try lab.peer("a", sees: "b")?["pinned"] as? Bool == true)
        let totals = try sendAndPump(lab, content: MeshLab.random(500), consent: true)
        let sends = try lab.sends("a")
        #expect(sends[1]["status"] as? String == "failed")
        #expect(sends[1]["reason"] as? String == "downgrade")
        #expect(totals["b"]?["delivered_legacy"] == nil)
        #expect(lab.delivered("b").count == 1)
    }

    @Test func aPinnedPeerThatNeverProvesItselfTimesOutBlocked() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        _ = try sendAndPump(lab, content: MeshLab.random(500))
        _ = try lab.database("a").execute("DELETE FROM mesh_sessions", [])
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("late.bin", MeshLab.random(300)), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["waiting"] == 1)
        lab.clock += 6_000   // b is out of range: no proof within 5 s, and no progress over two passes
        #expect(try lab.pass("a", "media-outbox")["waiting"] == 1)
        lab.clock += 1_000
        #expect(try lab.pass("a", "media-outbox")["failed"] == 1)
        #expect(try lab.sends("a")[1]["reason"] as? String == "proof-timeout")
        // b comes back in range: the next send restarts the stale handshake and goes encrypted.
        _ = try lab.database("a").execute("DELETE FROM mesh_outbox", [])
        let again = MeshLab.random(400)
        let totals = try sendAndPump(lab, content: again)
        #expect(totals["b"]?["delivered_encrypted"] == 1)
        #expect(lab.delivered("b").values.contains(again))
    }

    @Test func thePlanOf256FragmentsIsSentAnd257FailsVisiblyEmittingNothing() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        _ = try sendAndPump(lab, content: MeshLab.random(100))
        // Encrypted v2 packet without route: 16 + 8 + 8 + (4 + 1 + TLV + 16); TLV = 47 + n for a 5-byte name and the
        // default 24-byte MIME type. 469-byte chunks: n = 119,964 gives exactly 256 fragments, one byte more 257.
        let fits = MeshLab.random(119_964), over = MeshLab.random(119_965)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("f.bin", fits)])
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("g.bin", over)])
        let framesBefore: Int = try lab.database("a").scalar("SELECT count(*) FROM mesh_outbox") ?? 0
        let counts = try lab.pass("a", "media-outbox")
        #expect(counts["transmitted_encrypted"] == 1 && counts["failed"] == 1)
        let framesAfter: Int = try lab.database("a").scalar("SELECT count(*) FROM mesh_outbox") ?? 0
        #expect(framesAfter - framesBefore == 256)
        let sends = try lab.sends("a")
        #expect(sends[1]["fragments"] as? Int == 256 && sends[1]["status"] as? String == "transmitted")
        #expect(sends[2]["fragments"] as? Int == 257 && sends[2]["status"] as? String == "failed")
        #expect(sends[2]["reason"] as? String == "too-many-fragments")
        try lab.exchange("a", "b")
        let received = try lab.pass("b", "media-inbox")
        #expect(received["fragment_stored"] == 255 && received["reassembled"] == 1 && received["delivered_encrypted"] == 1)
        #expect(lab.delivered("b").values.contains(fits))
        #expect(try lab.job("a", ["mesh", "sends"]).stdout.contains("exceeds 256 fragments"))
    }

    @Test func aLegacyPlanOver256FragmentsFailsAndConsumesItsConsent() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b", emulate: "older-client")
        try lab.announceAll(["a", "b"], links: Self.pair)
        // Signed fileTransfer v2: 16 + 8 + 8 + (47 + n) + 64 → n = 119,921 is 256 fragments, 119,922 is 257.
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("h.bin", MeshLab.random(119_922)), "--accept-unencrypted"])
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("i.bin", MeshLab.random(119_921)), "--accept-unencrypted"])
        let counts = try lab.pass("a", "media-outbox")
        #expect(counts["failed"] == 1 && counts["transmitted_legacy"] == 1)
        let sends = try lab.sends("a")
        #expect(sends[0]["reason"] as? String == "too-many-fragments" && sends[0]["consent_pending"] as? Bool == false)
        #expect(sends[1]["fragments"] as? Int == 256)
    }

    @Test func threeNodesCarryAnEncryptedFileThroughARelayThatCannotReadIt() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("r"); try lab.initNode("c")
        // a and c are out of range of each other: every frame between them goes through r.
        let links = MeshLab.bidirectional([("a", "r"), ("r", "c")])
        try lab.announceAll(["a", "r", "c"], links: links, rounds: 3)
        #expect(try lab.peer("a", sees: "c") != nil)
        #expect(try lab.peer("c", sees: "a") != nil)
        let content = MeshLab.random(9_000)
        let totals = try sendAndPump(lab, from: "a", to: "c", content: content, links: links, nodes: ["a", "r", "c"], rounds: 14)
        #expect(totals["c"]?["delivered_encrypted"] == 1)
        #expect(lab.delivered("c").values.first == content)
        #expect((totals["r"]?["relayed"] ?? 0) > 20)
        #expect(lab.delivered("r").isEmpty)
        #expect(try lab.peer("a", sees: "c")?["pinned"] as? Bool == true)
        #expect(try lab.peer("r", sees: "a")?["session"] as? String == "none")
    }

    @Test func aSourceRoutedSendIsPlannedWithTheRoutedChunkSize() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("r"); try lab.initNode("c")
        let links = MeshLab.bidirectional([("a", "r"), ("r", "c")])
        try lab.announceAll(["a", "r", "c"], links: links, rounds: 3)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--via", lab.id("r"), lab.file("first.bin", MeshLab.random(1_500))])
        let first = try lab.pump(["a", "r", "c"], links: links, rounds: 14)
        #expect(first["c"]?["delivered_encrypted"] == 1)
        // Routed v2 packet with one hop: 16 + 8 + 8 + (1 + 8) + (4 + 1 + 47 + n + 16) = 109 + n bytes, in chunks of
        // 512 − (16 + 8 + 8 + 9 + 13 + 16) = 442: n = 113,043 is 256 fragments, one byte more is 257. Unrouted, the
        // same 113,044 bytes are 242 fragments of 469.
        let fits = MeshLab.random(113_043), over = MeshLab.random(113_044)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--via", lab.id("r"), lab.file("f.bin", fits)])
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--via", lab.id("r"), lab.file("g.bin", over)])
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("g.bin", over)])
        let totals = try lab.pump(["a", "r", "c"], links: links, rounds: 3)
        let sends = try lab.sends("a")
        #expect(sends[1]["status"] as? String == "carried" && sends[1]["fragments"] as? Int == 256)
        #expect(sends[2]["status"] as? String == "failed" && sends[2]["fragments"] as? Int == 257)
        #expect(sends[3]["status"] as? String == "carried" && sends[3]["fragments"] as? Int == 242)
        #expect(totals["c"]?["delivered_encrypted"] == 2)
        #expect(lab.delivered("c").count == 3)
        #expect(lab.delivered("c").values.contains(fits) && lab.delivered("c").values.contains(over))
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--via", "zz", lab.file("h.bin", [1])], exit: 64)
    }

    @Test func threeNodesCarryASignedLegacyFileAndARelayCannotForgeIt() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("r"); try lab.initNode("c", emulate: "older-client")
        let links = MeshLab.bidirectional([("a", "r"), ("r", "c")])
        try lab.announceAll(["a", "r", "c"], links: links, rounds: 3)
        let path = lab.file("plain.txt", Array("hello over two hops".utf8))
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), path, "--accept-unencrypted"])
        // The relay tampers with the frame it forwards: flips a content byte in its outbox before carrying it on.
        _ = try lab.pass("a", "media-outbox")
        try lab.exchange("a", "r")
        _ = try lab.pass("r", "media-inbox")
        let db = try lab.database("r")
        let row = try db.queryOne("SELECT id, frame FROM mesh_outbox WHERE id = (SELECT max(id) FROM mesh_outbox)")!
        var frame = try row.get(1, as: [UInt8].self)
        var packet = try BitchatPacket.decode(frame)
        #expect(packet.messageType == .fileTransfer)
        packet.payload[packet.payload.count - 1] ^= 0x01
        frame = try packet.encoded()
        _ = try db.execute("UPDATE mesh_outbox SET frame = ? WHERE id = ?", [frame, try row.get(0, as: Int64.self)])
        try lab.exchange("r", "c")
        #expect(try lab.pass("c", "media-inbox")["rejected_forged"] == 1)
        #expect(lab.delivered("c").isEmpty)
    }

    @Test func panicWipeClearsKeysPinsSessionsConsentsAndMediaAndReportsIt() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        _ = try sendAndPump(lab, from: "a", to: "b", content: MeshLab.random(700))
        try lab.job("b", ["mesh", "send-file", "--to", lab.id("a"), lab.file("pending.bin", [1, 2, 3]), "--accept-unencrypted"])
        #expect(lab.delivered("b").count == 1)
        let report = try lab.job("b", ["mesh", "panic-wipe"], json: true).jsonObject()["cleared"] as! [String: Int]
        #expect(report["keys"] == 2 && report["pins"] == 1 && report["sessions"] == 1 && report["peers"] == 1)
        #expect(report["pending_consents"] == 1 && report["pending_sends"] == 1 && report["media_files"] == 1)
        #expect(lab.delivered("b").isEmpty)
        let db = try lab.database("b")
        for table in ["mesh_node", "mesh_pins", "mesh_peers", "mesh_sessions", "mesh_deliveries", "mesh_inbox", "mesh_outbox"] {
            #expect((try db.scalar("SELECT count(*) FROM \(table)") as Int?) == 0)
        }
        #expect((try db.scalar("SELECT count(*) FROM mesh_sends WHERE consent = 1 OR sealed IS NOT NULL") as Int?) == 0)
        let after = try lab.job("b", ["mesh", "peers"], exit: 78)
        #expect(after.stderr.contains("mesh init"))
        try lab.initNode("b")
        #expect(try lab.peers("b").isEmpty)
    }
}
