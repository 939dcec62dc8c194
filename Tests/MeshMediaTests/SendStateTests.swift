import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// A send's status never claims more than the sender knows. Frames handed to the
/// radio are `transmitted`; `carried` once `job mesh exchange` carried every frame to a neighbour; nothing is
/// ever reported delivered, since the mesh gives no receipt.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct SendStateTests {
    static let pair = MultiNodeTests.pair

    @Test func aSendIsTransmittedUntilEveryFrameIsCarriedAndNeverReportedDelivered() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("warmup.bin", MeshLab.random(200))])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 6)

        // Several fragments, planned but not yet carried anywhere.
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("big.bin", MeshLab.random(3_000))])
        #expect(try lab.pass("a", "media-outbox")["transmitted_encrypted"] == 1)
        var send = try lab.sends("a")[1]
        #expect(send["status"] as? String == "transmitted")
        #expect((send["explanation"] as? String)?.contains("not yet carried") == true)
        let fragments = send["fragments"] as! Int
        #expect(fragments > 2)

        // Part of the frames reach b: still only transmitted.
        let partial = try lab.job("a", ["mesh", "exchange", "--to", lab.store("b"), "--limit", "2"], json: true).jsonObject()
        #expect(partial["sends_carried"] as? Int == 0)
        #expect(try lab.sends("a")[1]["status"] as? String == "transmitted")

        // b loses its session (as if it restarted) and will drop the file; a can only say the frames were carried.
        _ = try lab.database("b").execute("DELETE FROM mesh_sessions", [])
        let rest = try lab.job("a", ["mesh", "exchange", "--to", lab.store("b")], json: true).jsonObject()
        #expect(rest["sends_carried"] as? Int == 1)
        #expect(try lab.pass("b", "media-inbox")["no_session"] == 1)
        send = try lab.sends("a")[1]
        #expect(send["status"] as? String == "carried")
        #expect((send["explanation"] as? String)?.contains("no delivery receipt") == true)
        let human = try lab.job("a", ["mesh", "sends"]).stdout
        #expect(human.contains("send 2: carried encrypted"))
        #expect(try lab.sends("a").allSatisfy { ["transmitted", "carried"].contains($0["status"] as? String) })
    }

    @Test func aSendWhoseFramesExpireUncarriedStaysTransmitted() throws {
        let lab = MeshLab()
        try lab.initNode("a", emulate: "older-client"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("n.txt", Array("never carried".utf8)), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        lab.clock += 86_400_000 + 1   // b stays out of range past the outbox retention
        #expect(try lab.pass("a", "media-outbox")["announced"] == 1)
        #expect(try lab.exchange("a", "b") == 1)   // the pass's fresh announce only: the send's frames expired
        #expect(try lab.sends("a")[0]["status"] as? String == "transmitted")
    }
}
