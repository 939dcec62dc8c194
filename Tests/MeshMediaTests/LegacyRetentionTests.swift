import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// Frames that carry a file in the clear (signed legacy fileTransfer and its fragments) leave the sender's and the
/// relays' outboxes — and their store files — once carried to their next hop, and expire after the carry window.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct LegacyRetentionTests {
    static let line = MeshLab.bidirectional([("a", "r"), ("r", "c")])

    /// a and c out of range of each other, c an older client that only takes signed legacy files.
    func threeNodes() throws -> MeshLab {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("r"); try lab.initNode("c", emulate: "older-client")
        try lab.announceAll(["a", "r", "c"], links: Self.line, rounds: 3)
        return lab
    }

    func exchange(_ lab: MeshLab, _ from: String, _ to: String) throws -> (carried: Int, handedOver: Int?) {
        let object = try lab.job(from, ["mesh", "exchange", "--to", lab.store(to)], json: true).jsonObject()
        return (object["carried"] as? Int ?? -1, object["handed_over"] as? Int)
    }

    /// Plaintext of the file that is still in `node`'s store files.
    func traces(_ lab: MeshLab, _ node: String, name: String, content: [UInt8]) -> [String] {
        ([Array(name.utf8)] + StoreFiles.probes(of: content)).flatMap { StoreFiles.holding($0, in: lab.store(node)) }
    }

    func plaintextFramesInOutbox(_ lab: MeshLab, _ node: String) throws -> Int {
        try lab.database(node).query("SELECT frame FROM mesh_outbox")
            .filter { OutboxRetention.carriesPlaintextFile(try BitchatPacket.decode(try $0.get(0, as: [UInt8].self))) }.count
    }

    @Test func aRoutedLegacyFileLeavesTheSenderAndTheRelayTheMomentItIsCarriedToItsNextHop() throws {
        let lab = try threeNodes()
        let name = "canary-\(UUID().uuidString).txt"
        let content = MeshLab.random(3_000)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--via", lab.id("r"), lab.file(name, content), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        let frames = try plaintextFramesInOutbox(lab, "a")
        #expect(frames > 1)
        #expect(!traces(lab, "a", name: name, content: content).isEmpty)   // the probe finds what is there

        let first = try exchange(lab, "a", "r")
        #expect(first.handedOver == frames)
        #expect(try plaintextFramesInOutbox(lab, "a") == 0)
        // Erased because it was handed over: the send still says it was carried.
        #expect(try lab.sends("a").first?["status"] as? String == "carried")
        #expect(try lab.pass("r", "media-inbox")["relayed"] == frames)
        #expect(!traces(lab, "r", name: name, content: content).isEmpty)
        let second = try exchange(lab, "r", "c")
        #expect(second.handedOver == frames)
        #expect(try lab.pass("c", "media-inbox")["delivered_legacy"] == 1)
        #expect(lab.delivered("c").values.first == content)

        // Carried: its name and content are in none of the sender's, the relay's or the receiver's store files.
        #expect(traces(lab, "a", name: name, content: content) == [])
        #expect(traces(lab, "r", name: name, content: content) == [])
        #expect(traces(lab, "c", name: name, content: content) == [])
        #expect(try plaintextFramesInOutbox(lab, "r") == 0)
        // Nothing is carried again.
        #expect(try exchange(lab, "a", "r").carried == 0)
    }

    @Test func anUnroutedLegacyFileStaysWithTheSenderOnlyUntilTheCarryWindowEnds() throws {
        let lab = try threeNodes()
        let name = "canary-\(UUID().uuidString).txt"
        let content = MeshLab.random(2_000)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file(name, content), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        let frames = try plaintextFramesInOutbox(lab, "a")
        // r is not the recipient of an unrouted frame: a keeps it (for c, should c come in range) within the window.
        #expect(try exchange(lab, "a", "r").handedOver == 0)
        #expect(try lab.pass("r", "media-inbox")["relayed"] == frames)
        #expect(try exchange(lab, "r", "c").handedOver == frames)
        #expect(try lab.pass("c", "media-inbox")["delivered_legacy"] == 1)
        #expect(traces(lab, "r", name: name, content: content) == [])
        #expect(!traces(lab, "a", name: name, content: content).isEmpty)

        // Past the window the sender's pass erases it.
        lab.clock += OutboxRetention.legacyWindowMilliseconds
        #expect(try lab.pass("a", "media-outbox")["expired_frames"] == frames)
        #expect(traces(lab, "a", name: name, content: content) == [])

        // A legacy file never carried in time is not carried late, and the link itself erases it.
        let late = MeshLab.random(1_500), lateName = "late-\(UUID().uuidString).txt"
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file(lateName, late), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        lab.clock += OutboxRetention.legacyWindowMilliseconds
        #expect(try exchange(lab, "a", "r").carried == 0)
        #expect(try plaintextFramesInOutbox(lab, "a") == 0)
        #expect(traces(lab, "a", name: lateName, content: late) == [])
        // Encrypted and control frames keep the day rule: a's announce from the start is still there to carry.
        #expect((try lab.database("a").scalar("SELECT count(*) FROM mesh_outbox") as Int?) ?? 0 > 0)
    }
}
