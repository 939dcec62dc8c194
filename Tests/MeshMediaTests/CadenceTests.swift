import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// Announces go out on a cadence from the outbox pass, and the proof timeout is tracked across passes: a handshake
/// spanning once-a-minute passes does not make a consented send fall back to the unencrypted form.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct CadenceTests {
    func announceFrames(_ lab: MeshLab, _ node: String) throws -> Int {
        try lab.database(node).query("SELECT frame FROM mesh_outbox").filter {
            try BitchatPacket.decode(try $0.get(0, as: [UInt8].self)).messageType == .announce
        }.count
    }

    @Test func theOutboxPassAnnouncesWhenAnAnnounceIsDueAndNotBefore() throws {
        let lab = MeshLab()
        try lab.initNode("a")
        #expect(try lab.pass("a", "media-outbox")["announced"] == 1)
        #expect(try announceFrames(lab, "a") == 1)
        lab.clock += 60_000
        #expect(try lab.pass("a", "media-outbox")["announced"] == nil)
        #expect(try announceFrames(lab, "a") == 1)
        lab.clock += 240_000   // 300 s since the last announce (the default interval)
        #expect(try lab.pass("a", "media-outbox")["announced"] == 1)
        #expect(try announceFrames(lab, "a") == 2)

        // An announce by hand restarts the cadence; the interval is a setting.
        lab.clock += 200_000
        try lab.job("a", ["mesh", "announce"])
        lab.clock += 200_000
        #expect(try lab.pass("a", "media-outbox")["announced"] == nil)
        try lab.job("a", ["settings", "set", "mesh.announce-interval-seconds", "60"])
        #expect(try lab.pass("a", "media-outbox")["announced"] == 1)
        try lab.job("a", ["settings", "set", "mesh.announce-interval-seconds", "10"], exit: 64)
    }

    @Test func passesAloneLetTwoNodesLearnEachOther() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.pump(["a", "b"], links: MeshLab.bidirectional([("a", "b")]), rounds: 2)
        #expect(try lab.peer("a", sees: "b") != nil)
        #expect(try lab.peer("b", sees: "a") != nil)
    }

    /// One radio round a minute: outbox passes, exchanges, inbox passes, then 60 s pass.
    func minuteRounds(_ lab: MeshLab, _ nodes: [String], links: [(String, String)], rounds: Int) throws -> [String: Int] {
        var totals: [String: Int] = [:]
        for _ in 0..<rounds {
            for node in nodes { totals.merge(try lab.pass(node, "media-outbox").mapKeys { "\(node).\($0)" }, uniquingKeysWith: +) }
            for (from, to) in links { try lab.exchange(from, to) }
            for node in nodes { totals.merge(try lab.pass(node, "media-inbox").mapKeys { "\(node).\($0)" }, uniquingKeysWith: +) }
            lab.clock += 60_000
        }
        return totals
    }

    @Test func aConsentedSendWhoseHandshakeSpansOnceAMinutePassesGoesEncryptedNotUnencrypted() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        let links = MeshLab.bidirectional([("a", "b")])
        try lab.announceAll(["a", "b"], links: links)
        let content = MeshLab.random(2_000)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("p.bin", content), "--accept-unencrypted"])
        let totals = try minuteRounds(lab, ["a", "b"], links: links, rounds: 7)
        #expect(totals["a.transmitted_legacy"] == nil)
        #expect(totals["a.transmitted_encrypted"] == 1)
        #expect(totals["b.delivered_encrypted"] == 1)
        #expect(try lab.sends("a").first?["form"] as? String == "encrypted")
    }

    @Test func aConsentedSendToAPeerThatNeverAnswersStillFallsBackOnceTheHandshakeStalls() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: MeshLab.bidirectional([("a", "b")]))
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("q.bin", MeshLab.random(500)), "--accept-unencrypted"])
        // b is out of range: nothing is carried.
        let totals = try minuteRounds(lab, ["a"], links: [], rounds: 4)
        #expect(totals["a.waiting"] == 2)
        #expect(totals["a.transmitted_legacy"] == 1)
        #expect(try lab.sends("a").first?["form"] as? String == "legacy")
    }
}

extension Dictionary where Key == String {
    func mapKeys(_ transform: (String) -> String) -> [String: Value] {
        Dictionary(uniqueKeysWithValues: map { (transform($0.key), $0.value) })
    }
}
