import Foundation
import Glibc
@testable import Grants
import Testing
import TestSupport

/// What the sender's `offers list` says about its outgoing offers is true: an offer being sent is recorded before
/// the dial (a killed `offers send` leaves one the sender can list and cancel), and after the receiver revoked us a
/// held offer says it cannot be delivered and to pair again, until the sweep finishes it as undeliverable.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct OutgoingOfferTruthTests {
    func outgoing(_ node: LinkTestNode) throws -> [[String: Any]] {
        try #require(try node.json(["offers", "list"])["outgoing"] as? [[String: Any]])
    }

    @Test func aSendKilledDuringItsDialLeavesAnOfferTheSenderCanListAndCancel() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        // Alice's address answers nothing: Bob's dial waits there until it is killed.
        let (socketFD, address) = try RawPeer.staller(on: "127.0.0.1")
        defer { close(socketFD) }
        try pair(issuer: alice, holder: bob, label: "alice", address: address)
        try bob.set(["link.connect-timeout-seconds": "30"])
        let sending = try bob.startJob(["--store", bob.store, "--json", "offers", "send", "--to", "alice",
                                        "--ticket-file", ticketFile(bob, "ticket-killed"), "--files", "2", "--bytes", "7"])
        let deadline = Date().addingTimeInterval(20)
        while !RawPeer.hasPendingConnection(socketFD) && Date() < deadline { usleep(20_000) }
        #expect(RawPeer.hasPendingConnection(socketFD), "the send dialled Alice")
        sending.signal(SIGKILL)
        _ = try sending.wait(timeout: 10)

        let offers = try outgoing(bob)
        #expect(offers.count == 1, "the offer being sent is listed: \(offers)")
        let offer = try #require(offers.first)
        #expect(offer["state"] as? String == "held" && offer["files"] as? Int == 2 && offer["bytes"] as? Int == 7, "\(offer)")
        let id = try #require(offer["offer_id"] as? String)
        #expect(try bob.run(["offers", "cancel", id]).exitCode == 0, "and can be cancelled")
        #expect(try outgoing(bob).first?["state"] as? String == "cancelled")
    }

    @Test func afterTheReceiverRevokedUsAHeldOfferSaysItCannotBeDeliveredAndARefusedOneIsNotListed() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try bob.startServer()
        try pair(issuer: bob, holder: alice, label: "bob")
        let port = bob.port
        _ = try bob.stopServer()
        // Bob is away: the offer is held for his next check.
        #expect(try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t-held"), "--files", "1", "--bytes", "1"])["state"] as? String == "held")
        #expect(try alice.ok(["offers", "list"]).contains("held — will be delivered when they next check"))
        #expect(try outgoing(alice).first?["deliverable"] as? Bool == true)

        // Back, he revokes Alice; her next send learns it (exit 69).
        try bob.startServer(port: port)
        defer { _ = try? bob.stopServer() }
        _ = try bob.ok(["grants", "revoke", alice.endpoint.fingerprint])
        let refused = try alice.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t-refused"), "--files", "1", "--bytes", "1"])
        #expect(refused.exitCode == 69, "\(refused.stderr)")

        let text = try alice.ok(["offers", "list"])
        #expect(text.contains("held — not deliverable: the other device removed this one — pair again"), "\(text)")
        #expect(!text.contains("will be delivered when they next check"), "\(text)")
        let offers = try outgoing(alice)
        #expect(offers.count == 1, "the offer the revoked grant never carried is not listed: \(offers)")
        #expect(offers.first?["state"] as? String == "held" && offers.first?["deliverable"] as? Bool == false, "\(offers)")
    }

    @Test func theSweepFinishesAHeldOfferToAContactThatRevokedUsAsUndeliverableStopsItsShareAndNotifies() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try bob.startServer()
        try pair(issuer: bob, holder: alice, label: "bob")
        let port = bob.port
        _ = try bob.stopServer()
        #expect(try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t-held"), "--files", "1", "--bytes", "1"])["state"] as? String == "held")
        // Bob revokes Alice, and her next send learns it.
        try bob.startServer(port: port)
        _ = try bob.ok(["grants", "revoke", alice.endpoint.fingerprint])
        #expect(try alice.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t-refused"), "--files", "1", "--bytes", "1"]).exitCode == 69)
        _ = try bob.stopServer()

        // Before, the sweep left it held for good, its ticket kept for a device that removed Alice.
        let sweep = try alice.json(["sweep-grants"])
        #expect((sweep["counts"] as? [String: Int])?["undeliverable_offers"] == 1, "\(sweep)")
        let offers = try outgoing(alice)
        #expect(offers.count == 1 && offers.first?["state"] as? String == "undeliverable" && offers.first?["deliverable"] as? Bool == false, "\(offers)")
        let text = try alice.ok(["offers", "list"])
        #expect(text.contains("undeliverable — the pairing ended before it was collected; its share was stopped"), "\(text)")
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE ticket_sealed IS NOT NULL OR share_stopped_at IS NULL") == 0)
        #expect(notifications(alice) == ["offer-undeliverable 1"])
        // Finished once: a later sweep finds nothing more, and nothing is notified again.
        #expect((try alice.json(["sweep-grants"])["counts"] as? [String: Int])?["undeliverable_offers"] == 0)
        #expect(notifications(alice) == ["offer-undeliverable 1"])
    }
}
