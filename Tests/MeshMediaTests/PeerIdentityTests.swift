import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// A signing key is bound to a Noise static key only by the peer itself inside a session that
/// proved that key; an announce is a claim that never evicts a binding, and conflicting claims are visible and
/// refuse legacy files until a session settles them. Every attack runs through `job` and real store files; the
/// attacker's frames are crafted with the module's encoders and carried by `job mesh exchange`.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct PeerIdentityTests {
    static let pair = MultiNodeTests.pair

    /// The attack: m announces a's Noise key with m's signing key before a does. The binding a makes in
    /// its session replaces m's claim: m's legacy file "from a" is forged, a's genuinely signed one is delivered,
    /// and m announcing again changes nothing.
    @Test func theKeyAPeerBindsInItsSessionOutranksAnEarlierImpostorAnnounce() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("m")
        let thief = try Ed25519PrivateKey.generate()
        try lab.broadcast(from: "m", [try lab.forgedAnnounce(of: "a", signedWith: thief, at: lab.clock - 60_000)])
        #expect(try lab.deliver("m", to: "b")["announce_verified"] == 1)
        #expect(try lab.peer("b", sees: "a")?["identity"] as? String == "provisional")

        // a's own announce now reaches b: a conflict, visible, never a silent rejection.
        try lab.announceAll(["a", "b"], links: Self.pair)
        let conflicted = try lab.peer("b", sees: "a")
        #expect(conflicted?["identity"] as? String == "conflict")
        #expect(conflicted?["conflicting_claims"] as? Int == 2)
        #expect(try lab.job("b", ["mesh", "peers"]).stdout.contains("identity=conflict(2 conflicting claims)"))

        // a sends b an encrypted file: the session proves a's Noise key and a's 0x21 binds a's signing key.
        let content = MeshLab.random(900)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("hello.bin", content)])
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 6)
        #expect(totals["b"]?["delivered_encrypted"] == 1)
        #expect(totals["b"]?["identity_bound"] == 1)
        let settled = try lab.peer("b", sees: "a")
        #expect(settled?["identity"] as? String == "authenticated")
        #expect(settled?["signing_key"] as? String == Hex.encode(try lab.signingKey("a")))
        #expect(settled?["conflicting_claims"] as? Int == 1)
        #expect(settled?["pinned"] as? Bool == true)   // a's own announce carries privateMedia

        // m's legacy file under a's id: forged. a's genuinely signed legacy file (a's node, a's key): delivered.
        try lab.broadcast(from: "m", [try lab.legacyFile(from: "a", to: "b", content: Array("from m".utf8), signedWith: thief, at: lab.clock)])
        let fromThief = try lab.deliver("m", to: "b")
        #expect(fromThief["rejected_forged"] == 1 && fromThief["delivered_legacy"] == nil)
        let a = try lab.meshNode("a")
        let genuine = Array("really from a".utf8)
        try a.database.write { _ in
            try a.transmit(try a.signed(a.directed(.fileTransfer, to: try Hex.decode(lab.id("b")),
                                                   payload: try FilePacket(fileName: "g.txt", mimeType: "text/plain", content: genuine).encoded())))
        }
        let fromVictim = try lab.deliver("a", to: "b")
        #expect(fromVictim["delivered_legacy"] == 1 && fromVictim["rejected_forged"] == nil)
        #expect(lab.delivered("b").values.contains(genuine))
        #expect(!lab.delivered("b").values.contains(Array("from m".utf8)))

        // A newer impostor announce is a conflicting claim, never an eviction.
        lab.clock += 60_000
        try lab.broadcast(from: "m", [try lab.forgedAnnounce(of: "a", signedWith: thief, at: lab.clock)])
        #expect(try lab.deliver("m", to: "b")["announce_conflict"] == 1)
        #expect(try lab.peer("b", sees: "a")?["identity"] as? String == "authenticated")
        #expect(try lab.peer("b", sees: "a")?["signing_key"] as? String == Hex.encode(try lab.signingKey("a")))
    }

    /// Session first, no announce yet: the key a bound in the session cannot be replaced by m's announce.
    @Test func anAnnounceAfterASessionCannotBindAnotherSigningKey() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b"); try lab.initNode("m")
        // Only a announces; b sends a file to a, so a knows b from the session alone.
        try lab.job("a", ["mesh", "announce"])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 1)
        try lab.job("b", ["mesh", "send-file", "--to", lab.id("a"), lab.file("x.bin", MeshLab.random(300))])
        #expect(try lab.pump(["a", "b"], links: Self.pair, rounds: 6)["a"]?["delivered_encrypted"] == 1)
        #expect(try lab.peer("a", sees: "b")?["identity"] as? String == "authenticated")

        let thief = try Ed25519PrivateKey.generate()
        try lab.broadcast(from: "m", [try lab.forgedAnnounce(of: "b", signedWith: thief, capabilities: nil, at: lab.clock),
                                      try lab.legacyFile(from: "b", to: "a", content: Array("impostor".utf8), signedWith: thief, at: lab.clock)])
        let counts = try lab.deliver("m", to: "a")
        #expect(counts["announce_conflict"] == 1 && counts["announce_verified"] == nil)
        #expect(counts["rejected_forged"] == 1 && counts["delivered_legacy"] == nil)
        let seen = try lab.peer("a", sees: "b")
        #expect(seen?["identity"] as? String == "authenticated" && seen?["conflicting_claims"] as? Int == 1)
        #expect(seen?["signing_key"] as? String == Hex.encode(try lab.signingKey("b")))
        #expect(lab.delivered("a").count == 1)
    }

    /// No session: two announces claim different keys for a's Noise key. Legacy files under either key are
    /// refused until a session settles the conflict; then only a's key is accepted.
    @Test func conflictingClaimsRefuseLegacyFilesUnderEitherKeyUntilASessionSettlesThem() throws {
        let lab = MeshLab()
        try lab.initNode("a", emulate: "older-client"); try lab.initNode("b"); try lab.initNode("m")
        let thief = try Ed25519PrivateKey.generate()
        try lab.broadcast(from: "m", [try lab.forgedAnnounce(of: "a", signedWith: thief, capabilities: nil, at: lab.clock - 60_000)])
        _ = try lab.deliver("m", to: "b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let conflicted = try lab.peer("b", sees: "a")
        #expect(conflicted?["identity"] as? String == "conflict")
        #expect(conflicted?["signing_key"] is NSNull)

        // m's file under a's id and a's own genuinely signed file: both refused while the claims conflict.
        try lab.broadcast(from: "m", [try lab.legacyFile(from: "a", to: "b", content: Array("from m".utf8), signedWith: thief, at: lab.clock)])
        #expect(try lab.deliver("m", to: "b")["rejected_identity_conflict"] == 1)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("one.txt", Array("from a, 1".utf8)), "--accept-unencrypted"])
        let refused = try lab.pump(["a", "b"], links: Self.pair, rounds: 2)
        #expect(refused["b"]?["rejected_identity_conflict"] == 1 && refused["b"]?["delivered_legacy"] == nil)
        #expect(lab.delivered("b").isEmpty)

        // b sending to a waits for a session (a conflict leaves a's capabilities unknown); a's 0x21 settles it.
        try lab.job("b", ["mesh", "send-file", "--to", lab.id("a"), lab.file("reply.txt", Array("reply".utf8)), "--accept-unencrypted"])
        let settling = try lab.pump(["a", "b"], links: Self.pair, rounds: 6)
        #expect(settling["b"]?["identity_bound"] == 1)
        #expect(settling["a"]?["delivered_legacy"] == 1)   // a proved no privateMedia; b had this send's consent
        #expect(try lab.peer("b", sees: "a")?["identity"] as? String == "authenticated")

        try lab.broadcast(from: "m", [try lab.legacyFile(from: "a", to: "b", content: Array("from m, 2".utf8), signedWith: thief, at: lab.clock)])
        #expect(try lab.deliver("m", to: "b")["rejected_forged"] == 1)
        // (a's own node now pins b, so a's genuine legacy frame is built by a's node code directly.)
        let a = try lab.meshNode("a")
        try a.database.write { _ in
            try a.transmit(try a.signed(a.directed(.fileTransfer, to: try Hex.decode(lab.id("b")),
                                                   payload: try FilePacket(fileName: "two.txt", mimeType: "text/plain",
                                                                           content: Array("from a, 2".utf8)).encoded())))
        }
        #expect(try lab.deliver("a", to: "b")["delivered_legacy"] == 1)
        #expect(Set(lab.delivered("b").values) == [Array("from a, 2".utf8)])
    }

    /// The provisional rule: a peer known from one announce only may send legacy files under that key, and the
    /// inbox pass says it accepted them on a provisional claim.
    @Test func aSingleAnnounceIsAProvisionalClaimThatLegacyFilesAreAcceptedUnder() throws {
        let lab = MeshLab()
        try lab.initNode("a", emulate: "older-client"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        #expect(try lab.peer("b", sees: "a")?["identity"] as? String == "provisional")
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("p.txt", Array("provisional".utf8)), "--accept-unencrypted"])
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 2)
        #expect(totals["b"]?["delivered_legacy"] == 1 && totals["b"]?["legacy_sender_provisional"] == 1)
    }
}
