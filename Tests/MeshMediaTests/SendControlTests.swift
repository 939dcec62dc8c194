import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// `mesh show` prints the node's own identity; `mesh sends cancel|retry|withdraw-consent` control a send before
/// it is handed to the radio.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct SendControlTests {
    /// a (current) and c (an older client that only takes signed legacy files), knowing each other.
    func pair() throws -> MeshLab {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("c", emulate: "older-client")
        try lab.announceAll(["a", "c"], links: MeshLab.bidirectional([("a", "c")]))
        return lab
    }

    func sendFrames(_ lab: MeshLab) throws -> Int {
        try lab.database("a").scalar("SELECT count(*) FROM mesh_outbox WHERE send_id IS NOT NULL") ?? -1
    }

    @Test func meshShowPrintsTheNodesOwnPeerIDAndFingerprint() throws {
        let lab = MeshLab()
        let created = try lab.job("a", ["mesh", "init", "--nickname", "alice"], json: true).jsonObject()
        let shown = try lab.job("a", ["mesh", "show"], json: true).jsonObject()
        #expect(shown["peer_id"] as? String == created["peer_id"] as? String)
        #expect(shown["fingerprint"] as? String == created["fingerprint"] as? String)
        #expect(shown["nickname"] as? String == "alice")
        #expect((shown["signing_key"] as? String)?.count == 64)
        let text = try lab.job("a", ["mesh", "show"]).stdout
        #expect(text.contains(created["peer_id"] as! String) && text.contains(created["fingerprint"] as! String))
        // A store without a node says so (configuration error).
        try lab.job("none", ["mesh", "show"], exit: 78)
    }

    @Test func aQueuedSendCanBeCancelledAndThenNothingOfItIsSentOrKept() throws {
        let lab = try pair()
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("x.bin", MeshLab.random(300)), "--accept-unencrypted"])
        try lab.job("a", ["mesh", "sends", "cancel", "1"])
        let send = try #require(try lab.sends("a").first)
        #expect(send["status"] as? String == "failed" && send["reason"] as? String == "cancelled")
        #expect(send["consent_pending"] as? Bool == false)
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == nil)
        #expect(try sendFrames(lab) == 0)
        #expect((try lab.database("a").scalar("SELECT count(*) FROM mesh_sends WHERE sealed IS NOT NULL") as Int?) == 0)
        // A cancelled send cannot be retried; unknown and malformed numbers are refused.
        try lab.job("a", ["mesh", "sends", "retry", "1"], exit: 65)
        try lab.job("a", ["mesh", "sends", "cancel", "9"], exit: 65)
        try lab.job("a", ["mesh", "sends", "cancel", "one"], exit: 64)
    }

    @Test func aTransmittedSendCannotBeCancelledOrRetried() throws {
        let lab = try pair()
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("y.bin", MeshLab.random(300)), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        let refused = try lab.job("a", ["mesh", "sends", "cancel", "1"], exit: 65)
        #expect(refused.stderr.contains("handed to the radio"))
        try lab.job("a", ["mesh", "sends", "retry", "1"], exit: 65)
        #expect(try lab.sends("a").first?["status"] as? String == "transmitted")
    }

    @Test func aFailedSendCanBeRetriedWithConsentGivenAgainAndThenGoesOut() throws {
        let lab = try pair()
        let content = MeshLab.random(400)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("z.bin", content)])
        #expect(try lab.pass("a", "media-outbox")["failed"] == 1)
        #expect(try lab.sends("a").first?["reason"] as? String == "needs-consent")
        // Retried without consent: fails the same way (consent is never remembered).
        try lab.job("a", ["mesh", "sends", "retry", "1"])
        #expect(try lab.pass("a", "media-outbox")["failed"] == 1)
        try lab.job("a", ["mesh", "sends", "retry", "1", "--accept-unencrypted"])
        #expect(try lab.sends("a").first?["status"] as? String == "queued")
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        try lab.exchange("a", "c")
        #expect(try lab.pass("c", "media-inbox")["delivered_legacy"] == 1)
        #expect(Array(lab.delivered("c").values) == [content])
    }

    @Test func aConsentWithdrawnBeforeItIsUsedKeepsTheSendFromGoingUnencrypted() throws {
        let lab = try pair()
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("w.bin", MeshLab.random(300)), "--accept-unencrypted"])
        #expect(try lab.sends("a").first?["consent_pending"] as? Bool == true)
        try lab.job("a", ["mesh", "sends", "withdraw-consent", "1"])
        #expect(try lab.sends("a").first?["consent_pending"] as? Bool == false)
        #expect(try lab.pass("a", "media-outbox")["failed"] == 1)
        #expect(try lab.sends("a").first?["reason"] as? String == "needs-consent")
        #expect(try sendFrames(lab) == 0)
        // Once the send is finished there is no consent left to withdraw.
        try lab.job("a", ["mesh", "sends", "withdraw-consent", "1"], exit: 65)
    }
}
