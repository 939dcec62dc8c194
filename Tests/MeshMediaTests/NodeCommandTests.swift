import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// The `job mesh` commands' failure paths, dry runs, handshake collisions and the privacy rule.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct NodeCommandTests {
    static let pair = MeshLab.bidirectional([("a", "b")])

    @Test func commandsOnAStoreWithoutANodeAskForMeshInit() throws {
        let lab = MeshLab()
        for args in [["mesh", "announce"], ["mesh", "peers"], ["mesh", "exchange", "--to", lab.store("x")]] {
            let result = try lab.job("a", args, exit: 78)
            #expect(result.stderr.contains("job mesh init"))
        }
        let send = try lab.job("a", ["mesh", "send-file", "--to", String(repeating: "ab", count: 8), lab.file("f", [1])], exit: 78)
        #expect(send.stderr.contains("job mesh init"))
        #expect(try lab.pass("a", "media-inbox").isEmpty)
        let skipped = try lab.job("a", ["media-outbox"], json: true).jsonObject()
        #expect(skipped["outcome"] as? String == "skipped" && skipped["reason"] as? String == "no-node")
    }

    @Test func initTwiceIsRefusedAndBadOptionsAreUsageErrors() throws {
        let lab = MeshLab()
        try lab.initNode("a")
        #expect(try lab.job("a", ["mesh", "init"], exit: 65).stderr.contains("panic-wipe"))
        try lab.job("b", ["mesh", "init", "--emulate", "android-9"], exit: 64)
        try lab.job("b", ["mesh", "init", "--nickname", ""], exit: 64)
    }

    @Test func sendFileRefusesBadInputAndQueuesNothing() throws {
        let lab = MeshLab()
        try lab.initNode("a")
        let to = String(repeating: "ab", count: 8)
        try lab.job("a", ["mesh", "send-file", "--to", "not-hex", lab.file("f", [1])], exit: 64)
        try lab.job("a", ["mesh", "send-file", "--to", "abcd", lab.file("f", [1])], exit: 64)
        try lab.job("a", ["mesh", "send-file", lab.file("f", [1])], exit: 64)
        let big = try lab.job("a", ["mesh", "send-file", "--to", to, lab.file("big", [UInt8](repeating: 1, count: 1_048_577))], exit: 65)
        #expect(big.stderr.contains("1 MiB"))
        try lab.job("a", ["mesh", "send-file", "--to", to, lab.file("empty", [])], exit: 65)
        try lab.job("a", ["mesh", "send-file", "--to", to, lab.directory.file("missing")], exit: 65)
        try lab.job("a", ["mesh", "send-file", "--to", to, lab.directory.path], exit: 65)
        #expect(try lab.sends("a").isEmpty)
        // Exactly 1 MiB is accepted; a fingerprint works as well as a peer id.
        try lab.job("a", ["mesh", "send-file", "--to", to + String(repeating: "00", count: 24), lab.file("max", [UInt8](repeating: 2, count: 1_048_576))])
        #expect(try lab.sends("a").count == 1)
        // Unknown peer: planned as blocked, visibly.
        #expect(try lab.pass("a", "media-outbox")["failed"] == 1)
        #expect(try lab.sends("a")[0]["reason"] as? String == "no-stable-key")
    }

    @Test func exchangeRefusesMissingForeignAndOwnStores() throws {
        let lab = MeshLab()
        try lab.initNode("a")
        try lab.job("a", ["mesh", "exchange", "--to", lab.directory.file("nowhere.sqlite")], exit: 65)
        #expect(!FileManager.default.fileExists(atPath: lab.directory.file("nowhere.sqlite")))
        try lab.job("plain", ["migrate"])
        #expect(try lab.job("a", ["mesh", "exchange", "--to", lab.store("plain")], exit: 65).stderr.contains("no mesh node"))
        let garbage = lab.file("garbage.sqlite", Array("this is not a database".utf8))
        try lab.job("a", ["mesh", "exchange", "--to", garbage], exit: 65)
        try lab.job("a", ["mesh", "exchange", "--to", lab.store("a")], exit: 64)
        try lab.job("a", ["mesh", "exchange"], exit: 64)
    }

    @Test func dryRunsReportAndChangeNothing() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.job("a", ["mesh", "announce"])
        try lab.exchange("a", "b")
        let dry = try lab.pass("b", "media-inbox", ["--dry-run"])
        #expect(dry["pending_frames"] == 1)
        #expect(try lab.peers("b").isEmpty)
        #expect(try lab.pass("b", "media-inbox")["announce_verified"] == 1)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("f", [1, 2])])
        #expect(try lab.pass("a", "media-outbox", ["--dry-run"])["queued"] == 1)
        #expect(try lab.sends("a")[0]["status"] as? String == "queued")
    }

    @Test func simultaneousSendsResolveTheHandshakeCollisionAndBothFilesArrive() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let toB = MeshLab.random(600), toA = MeshLab.random(700)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("x", toB)])
        try lab.job("b", ["mesh", "send-file", "--to", lab.id("a"), lab.file("y", toA)])
        let totals = try lab.pump(["a", "b"], links: Self.pair, rounds: 8)
        // Both started a handshake in the same round: the lower peer id kept the initiator role, once.
        #expect((totals["a"]?["handshake_collision"] ?? 0) + (totals["b"]?["handshake_collision"] ?? 0) == 1)
        #expect(lab.delivered("b").values.contains(toB))
        #expect(lab.delivered("a").values.contains(toA))
        #expect(try lab.sends("a")[0]["form"] as? String == "encrypted")
        #expect(try lab.sends("b")[0]["form"] as? String == "encrypted")
    }

    @Test func logsAndErrorsNeverCarryPeerIdsFingerprintsNicknamesOrFileNames() throws {
        let lab = MeshLab()
        try lab.job("a", ["mesh", "init", "--nickname", "CANARYNICKA"])
        try lab.job("b", ["mesh", "init", "--nickname", "CANARYNICKB", "--emulate", "older-client"])
        try lab.announceAll(["a", "b"], links: Self.pair)
        let peers = try lab.peers("a") + lab.peers("b")
        let identifiers = peers.flatMap { [$0["peer_id"] as! String, $0["fingerprint"] as! String] }
        try lab.job("a", ["mesh", "send-file", "--to", identifiers[0], lab.file("CANARYFILE.txt", Array("CANARYCONTENT".utf8)), "--accept-unencrypted"])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 3)
        try lab.job("a", ["mesh", "send-file", "--to", identifiers[0], lab.file("CANARYFILE2.txt", [UInt8](repeating: 1, count: 1_048_577))], exit: 65)
        try lab.job("b", ["mesh", "panic-wipe"])
        #expect(lab.delivered("b").isEmpty)
        let log = lab.stderrLog
        #expect(log.contains("event="))
        for canary in ["CANARYNICK", "CANARYFILE", "CANARYCONTENT"] + identifiers + identifiers.map({ $0.uppercased() }) {
            #expect(!log.contains(canary), "stderr carried an identifier")
        }
    }
}
