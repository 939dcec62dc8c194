import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// An established session survives until a new handshake with the same static key completes.
/// The attacker's frames are crafted with the module's encoders and carried by `job mesh exchange`.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct SessionSurvivalTests {
    static let pair = MultiNodeTests.pair

    /// A handshake frame under a's id, crafted by m.
    static func handshakeFrame(_ lab: MeshLab, from sender: String, to recipient: String, payload: [UInt8]) throws -> BitchatPacket {
        BitchatPacket(type: .noiseHandshake, ttl: 7, timestamp: UInt64(lab.clock), senderID: try Hex.decode(lab.id(sender)),
                      recipientID: try Hex.decode(lab.id(recipient)), payload: payload)
    }

    @Test func aSpoofedFirstHandshakeMessageLeavesTheEstablishedSessionInPlace() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("m")
        try lab.announceAll(["a", "b"], links: Self.pair)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("one.bin", MeshLab.random(700))])
        #expect(try lab.pump(["a", "b"], links: Self.pair, rounds: 6)["b"]?["delivered_encrypted"] == 1)

        // m sends 32 random bytes (a first handshake message) under a's id: b answers it beside the session.
        try lab.broadcast(from: "m", [try Self.handshakeFrame(lab, from: "a", to: "b", payload: MeshLab.random(32))])
        #expect(try lab.deliver("m", to: "b")["handshake_step"] == 1)
        #expect(try lab.peer("b", sees: "a")?["session"] as? String == "established")

        // a's next file, in the session it has, still arrives.
        let second = MeshLab.random(800)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("two.bin", second)])
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 4)
        #expect(totals["b"]?["no_session"] == nil)
        #expect(totals["b"]?["delivered_encrypted"] == 1)
        #expect(lab.delivered("b").values.contains(second))

        // A garbage third message for the spoofed handshake fails that handshake only.
        try lab.broadcast(from: "m", [try Self.handshakeFrame(lab, from: "a", to: "b", payload: MeshLab.random(32)),
                                      try Self.handshakeFrame(lab, from: "a", to: "b", payload: MeshLab.random(96))])
        let garbage = try lab.deliver("m", to: "b")
        #expect(garbage["handshake_step"] == 1 && garbage["handshake_failed"] == 1)
        let third = MeshLab.random(900)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("three.bin", third)])
        #expect(try lab.pump(["a", "b"], links: Self.pair, rounds: 4)["b"]?["delivered_encrypted"] == 1)
        #expect(lab.delivered("b").values.contains(third))
    }

    /// The genuine peer restarting (it lost its half) still gets a new session: the new handshake with the same
    /// static key completes beside the old session and replaces it.
    @Test func aNewHandshakeWithTheSameStaticKeyReplacesTheEstablishedSessionWhenItCompletes() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("one.bin", MeshLab.random(700))])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 6)
        let before = try lab.meshNode("b").sessions.load(try Hex.decode(lab.id("a")))?.established?.handshakeHash
        _ = try lab.database("a").execute("DELETE FROM mesh_sessions", [])
        let again = MeshLab.random(600)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("again.bin", again)])
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 6)
        #expect(totals["b"]?["session_established"] == 1 && totals["b"]?["delivered_encrypted"] == 1)
        let after = try lab.meshNode("b").sessions.load(try Hex.decode(lab.id("a")))
        #expect(after?.established?.handshakeHash != nil && after?.established?.handshakeHash != before)
        #expect(after?.pending == nil)
        #expect(lab.delivered("b").values.contains(again))
    }
}
