import Cryptography
import Foundation
import Runner
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// The receive rules frame by frame, in process: announces, relaying, reassembly bounds, sessions.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ReceiveRulesTests {
    /// A node over a fresh migrated store, with its processor.
    final class Node {
        let host = InProcessJob(modules: [MeshMediaModule.module])
        let node: MeshNode
        let processor: InboxProcessor
        init(name: String, now: Int64 = 1_000_000) throws {
            let db = try host.database()
            let keyring = try StoreKeyring(storeKey: try SecretBytes.random(count: 32))
            let identity = try NodeIdentity.create(database: db, keyring: keyring, nickname: name, emulation: .current, now: now)
            node = MeshNode(database: db, keyring: keyring, identity: identity, now: now)
            processor = InboxProcessor(node: node, media: MediaInbox(database: db, keyring: keyring, folder: host.directory.file("media")))
        }
        func receive(_ frame: [UInt8]) throws -> Counts {
            var counts = Counts()
            try node.database.write { _ in try processor.process(frame: frame, counts: &counts) }
            return counts
        }
        func outbox() throws -> [[UInt8]] { try node.database.query("SELECT frame FROM mesh_outbox ORDER BY id").map { try $0.get(0) } }
    }

    @Test func announcesMustBeSignedByTheAnnouncedKeyFromTheMatchingPeerID() throws {
        let a = try Node(name: "a"), b = try Node(name: "b")
        let good = try a.node.announcePacket()
        var forged = good
        forged.signature![0] ^= 1
        var unsigned = good
        unsigned.signature = nil
        var wrongSender = good
        wrongSender.senderID = Array(repeating: 9, count: 8)
        #expect(try b.receive(try forged.encoded())["announce_rejected"] == 1)
        #expect(try b.receive(try unsigned.encoded())["announce_rejected"] == 1)
        #expect(try b.receive(try wrongSender.encoded())["announce_rejected"] == 1)
        #expect(try b.node.registry.all().isEmpty)
        #expect(try b.receive(try good.encoded())["announce_verified"] == 1)
        #expect(try b.receive(try good.encoded())["duplicate"] == 1)

        // An older announce does not overwrite a newer one.
        var old = BitchatPacket(type: .announce, ttl: 7, timestamp: 1, senderID: a.node.identity.peerID,
                                payload: try Announce(nickname: "old", noisePublicKey: a.node.identity.noise.publicKey,
                                                      signingPublicKey: a.node.identity.signing.publicKey, capabilities: nil).encoded())
        old.signature = try a.node.identity.signing.sign(try old.signingPreimage())
        #expect(try b.receive(try old.encoded())["announce_stale"] == 1)
        #expect(try b.node.registry.record(for: a.node.identity.peerID)?.capabilities == .privateMedia)
        #expect(try b.node.registry.record(for: a.node.identity.peerID)?.standing == .provisional)

        // Someone else announcing a's Noise key with their own signing key cannot take over a's entry: with no
        // session binding yet, the two claims are a conflict and neither key is in force.
        let thief = try Ed25519PrivateKey.generate()
        let stolen = Announce(nickname: "a", noisePublicKey: a.node.identity.noise.publicKey, signingPublicKey: thief.publicKey, capabilities: nil)
        var hijack = BitchatPacket(type: .announce, ttl: 7, timestamp: 2_000_000, senderID: a.node.identity.peerID, payload: try stolen.encoded())
        hijack.signature = try thief.sign(try hijack.signingPreimage())
        #expect(try b.receive(try hijack.encoded())["announce_conflict"] == 1)
        let record = try b.node.registry.record(for: a.node.identity.peerID)
        #expect(record?.standing == .conflict && record?.signingKey == nil && record?.claims.count == 2)
    }

    @Test func framesForOthersAreRelayedWithOneHopLessAndOwnFramesAreIgnored() throws {
        let a = try Node(name: "a"), b = try Node(name: "b")
        let elsewhere = BitchatPacket(type: .message, ttl: 3, timestamp: 5, senderID: a.node.identity.peerID,
                                      recipientID: Array(repeating: 4, count: 8), payload: [1, 2, 3])
        #expect(try b.receive(try elsewhere.encoded())["relayed"] == 1)
        let relayed = try BitchatPacket.decode(try b.outbox().last!)
        #expect(relayed.ttl == 2 && relayed.payload == [1, 2, 3] && relayed.recipientID == elsewhere.recipientID)
        var lastHop = elsewhere
        lastHop.ttl = 1
        lastHop.timestamp = 6
        #expect(try b.receive(try lastHop.encoded())["relayed"] == 0)
        // The same message at a lower TTL is a duplicate, not a new message.
        var again = elsewhere
        again.ttl = 2
        #expect(try b.receive(try again.encoded())["duplicate"] == 1)
        let own = BitchatPacket(type: .message, ttl: 3, timestamp: 7, senderID: b.node.identity.peerID, payload: [9])
        #expect(try b.receive(try own.encoded())["own"] == 1)
        #expect(try b.receive([0x01, 0x02])["malformed"] == 1)
    }

    @Test func reassemblyKeepsItsBounds() throws {
        let a = try Node(name: "a"), b = try Node(name: "b")
        let original = BitchatPacket(type: .message, ttl: 1, timestamp: 9, senderID: a.node.identity.peerID,
                                     recipientID: b.node.identity.peerID, payload: MeshLab.random(1_200))
        let frames = try FragmentPlanner.frames(for: original, fragmentID: [1, 2, 3, 4, 5, 6, 7, 8]).map { try $0.encoded() }
        #expect(frames.count == 3)
        #expect(try b.receive(frames[2])["fragment_stored"] == 1)
        #expect(try b.receive(frames[0])["fragment_stored"] == 1)
        let done = try b.receive(frames[1])
        #expect(done["reassembled"] == 1 && done["ignored"] == 1)
        #expect((try b.node.database.scalar("SELECT count(*) FROM mesh_fragments") as Int?) == 0)

        // A fragment claiming another total for the same set is ignored; the set is kept.
        let set2 = try FragmentPlanner.frames(for: original, fragmentID: [2, 2, 2, 2, 2, 2, 2, 2])
        #expect(try b.receive(try set2[0].encoded())["fragment_stored"] == 1)
        var liar = set2[1]
        var fragment = try Fragment.decode(liar.payload)
        fragment.total = 9
        liar.payload = try fragment.encoded()
        #expect(try b.receive(try liar.encoded())["fragment_mismatched"] == 1)
        #expect((try b.node.database.scalar("SELECT count(*) FROM mesh_fragments") as Int?) == 1)

        // Sets expire after 30 s.
        #expect(try b.receive(try set2[2].encoded())["fragment_stored"] == 1)
        #expect(try Reassembly(database: b.node.database).expire(now: b.node.now + 29_000) == 0)
        #expect(try Reassembly(database: b.node.database).expire(now: b.node.now + 30_001) == 2)

        // At most 128 sets in progress: the 129th evicts the oldest (one sender, so its own).
        for set in 0..<Reassembly.maxSets {
            let frame = try FragmentPlanner.frames(for: original, fragmentID: [UInt8](repeating: UInt8(set + 10), count: 8))[0]
            #expect(try b.receive(try frame.encoded())["fragment_stored"] == 1)
        }
        let extra = try FragmentPlanner.frames(for: original, fragmentID: [UInt8](repeating: 0xee, count: 8))[0]
        let counts = try b.receive(try extra.encoded())
        #expect(counts["fragment_stored"] == 1 && counts["fragment_set_evicted"] == 1)
        #expect((try b.node.database.scalar("SELECT count(*) FROM mesh_fragment_sets") as Int?) == Reassembly.maxSets)
        let oldest = a.node.identity.peerID + [UInt8](repeating: 10, count: 8)
        #expect((try b.node.database.scalar("SELECT count(*) FROM mesh_fragment_sets WHERE set_key = ?", [oldest]) as Int?) == 0)
    }

    @Test func reassemblyRefusesMoreThanTheByteBoundOfItsOriginalType() throws {
        let a = try Node(name: "a"), b = try Node(name: "b")
        // Hand-made fragments of a "message" (1 MiB bound), 40,000 bytes each: the 27th crosses 1,048,576.
        var stored = 0, rejected = 0
        for index in 0..<30 {
            let fragment = Fragment(fragmentID: [7, 7, 7, 7, 7, 7, 7, 7], index: UInt16(index), total: 60, originalType: 0x02,
                                    data: [UInt8](repeating: UInt8(index), count: 40_000))
            let packet = BitchatPacket(type: .fragment, ttl: 1, timestamp: UInt64(100 + index), senderID: a.node.identity.peerID,
                                       recipientID: b.node.identity.peerID, payload: try fragment.encoded())
            let counts = try b.receive(try packet.encoded())
            stored += counts["fragment_stored"]; rejected += counts["fragment_rejected"]
        }
        #expect(stored == 26 + 3 && rejected == 1)   // the set is dropped at the 27th, then a new one starts
        let bytes: Int = try b.node.database.scalar("SELECT coalesce(sum(length(data)), 0) FROM mesh_fragments") ?? -1
        #expect(bytes == 3 * 40_000)
    }

    @Test func encryptedFramesNeedAnEstablishedSession() throws {
        let a = try Node(name: "a"), b = try Node(name: "b")
        let packet = BitchatPacket(type: .noiseEncrypted, ttl: 1, timestamp: 1, senderID: a.node.identity.peerID,
                                   recipientID: b.node.identity.peerID, payload: MeshLab.random(60))
        #expect(try b.receive(try packet.encoded())["no_session"] == 1)
        // A handshake message 2 or 3 without a handshake in progress changes nothing.
        let stray = BitchatPacket(type: .noiseHandshake, ttl: 1, timestamp: 2, senderID: a.node.identity.peerID,
                                  recipientID: b.node.identity.peerID, payload: MeshLab.random(96))
        #expect(try b.receive(try stray.encoded())["handshake_unexpected"] == 1)
        #expect(try b.node.sessions.load(a.node.identity.peerID) == nil)
    }

    @Test func mutatedRealTrafficNeverBreaksTheReceivePath() throws {
        let a = try Node(name: "a"), b = try Node(name: "b")
        // Real frames: an announce, a handshake message 1, a signed legacy file in fragments.
        try a.node.database.write { _ in
            try a.node.transmit(try a.node.announcePacket())
            try a.node.startHandshake(with: b.node.identity.peerID)
            let file = try FilePacket(fileName: "x", mimeType: "m", content: MeshLab.random(2_000)).encoded()
            try a.node.transmit(try a.node.signed(a.node.directed(.fileTransfer, to: b.node.identity.peerID, payload: file)))
        }
        let seeds = try a.outbox()
        #expect(seeds.count > 4)
        _ = try b.receive(seeds[0])   // b knows a, so legacy frames reach signature checks
        var rng = SplitMix64(seed: 99)
        var total = Counts()
        for _ in 0..<3_000 {
            var frame = seeds[Int(rng.next() % UInt64(seeds.count))]
            switch rng.next() % 4 {
            case 0: frame[Int(rng.next() % UInt64(frame.count))] ^= UInt8(1 << (rng.next() % 8))
            case 1: frame.removeLast(Int(rng.next() % UInt64(frame.count)))
            case 2: frame[Int(rng.next() % UInt64(frame.count))] = UInt8(truncatingIfNeeded: rng.next())
            default: frame.insert(UInt8(truncatingIfNeeded: rng.next()), at: Int(rng.next() % UInt64(frame.count)))
            }
            let counts = try b.receive(frame)   // only store errors may throw; hostile bytes are counted
            for (key, value) in counts.entries { total[key] += value }
        }
        #expect(total["malformed"] > 0)
        // A mutation outside the signed bytes (the TTL) may deliver the genuine file; nothing altered is delivered.
        let deliveries: Int = try b.node.database.scalar("SELECT count(*) FROM mesh_deliveries") ?? -1
        #expect(deliveries <= 1)
        #expect(total["delivered_legacy"] == deliveries)
    }
}
