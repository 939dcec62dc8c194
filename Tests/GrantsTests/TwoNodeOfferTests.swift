import Foundation
@testable import Grants
import Testing
import TestSupport

/// Two nodes — two stores, two `serve-link --listen` processes on loopback — exchanging offers (docs/protocols/grants-and-link.md §4, §9, §11).
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct TwoNodeOfferTests {
    func offerIDs(_ node: LinkTestNode, _ side: String) throws -> [[String: Any]] {
        try node.json(["offers", "list"])[side] as? [[String: Any]] ?? []
    }

    @Test func aLiveOfferIsPendingOnTheReceiverWithExactlyOneConfirmationAndNoneOnTheSender() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice")

        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-live-1"), "--files", "3", "--bytes", "4096", "--name", "Alice's laptop"])
        #expect(sent["state"] as? String == "delivered")
        let offerID = try #require(sent["offer_id"] as? String)

        let incoming = try offerIDs(bob, "incoming")
        #expect(incoming.count == 1)
        #expect(incoming.first?["offer_id"] as? String == offerID)
        #expect(incoming.first?["state"] as? String == "pending", "never auto-accepted")
        #expect(incoming.first?["from"] as? String == alice.endpointHex)
        #expect(incoming.first?["from_label"] as? String == "alice", "the receiver's own label")
        #expect(!(try bob.ok(["--json", "offers", "list"])).contains("ticket-live-1"), "a listing never shows the ticket")
        #expect(try bob.scalar("SELECT count(*) FROM notifications") == 1)
        #expect(notifications(bob) == ["incoming-offer 1"])
        #expect(try alice.scalar("SELECT count(*) FROM notifications") == 0)
        #expect(notifications(alice).isEmpty)
        #expect(try offerIDs(alice, "outgoing").first?["state"] as? String == "delivered")

        // Accepting prints the ticket for the transfer tool; the sender learns the decision at the next link contact.
        #expect(try bob.ok(["offers", "accept", offerID]).trimmingCharacters(in: .whitespacesAndNewlines) == "ticket-live-1")
        #expect(try bob.run(["offers", "accept", offerID]).exitCode == 65, "a decided offer cannot be decided again")
        _ = try bob.json(["pull-offers", "--check-now"])
        #expect(try offerIDs(alice, "outgoing").first?["state"] as? String == "accepted")
        #expect(notifications(bob).count == 1, "a pull with nothing new raises nothing")

        // The claimed name is kept beside Bob's own label for Alice, never in place of it.
        let contacts = try #require(try JSONSerialization.jsonObject(with: Data(try bob.ok(["--json", "contacts", "list"]).utf8)) as? [[String: Any]])
        #expect(contacts.first?["label"] as? String == "alice")
        #expect(contacts.first?["claimed_name"] as? String == "Alice's laptop")
    }

    @Test func aHeldOfferIsCollectedOnceAndASecondPullCollectsNothing() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice")
        try bob.stopServer()

        let held = try alice.json(["offers", "send", "--to", bob.endpointHex, "--ticket-file", ticketFile(alice, "ticket-held-1"), "--files", "1", "--bytes", "10"])
        #expect(held["state"] as? String == "held")
        #expect((held["message"] as? String)?.contains("will be delivered when they next check") == true)
        #expect(try offerIDs(alice, "outgoing").first?["state"] as? String == "held")

        let skipped = try bob.json(["pull-offers"])
        #expect(skipped["outcome"] as? String == "skipped", "pulling is off by default")
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 0)

        let t0 = Date()
        let first = try bob.json(["pull-offers", "--check-now"], now: "@\(Int(t0.timeIntervalSince1970))")
        let counts = try #require(first["counts"] as? [String: Int])
        #expect(counts["collected"] == 1)
        #expect(try offerIDs(bob, "incoming").first?["state"] as? String == "pending")
        #expect(notifications(bob) == ["incoming-offer 1"])
        #expect(try offerIDs(alice, "outgoing").first?["state"] as? String == "delivered")

        // Within 5 minutes the contact is not dialed again; after that it is, and nothing is delivered twice.
        let soon = try bob.json(["pull-offers", "--check-now"], now: "@\(Int(t0.timeIntervalSince1970) + 60)")
        #expect((soon["counts"] as? [String: Int])?["recent"] == 1)
        let later = try bob.json(["pull-offers", "--check-now"], now: "@\(Int(t0.timeIntervalSince1970) + 400)")
        let laterCounts = try #require(later["counts"] as? [String: Int])
        #expect(laterCounts["contacts"] == 1 && laterCounts["collected"] == 0 && laterCounts["duplicates"] == 0)
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 1)
        #expect(notifications(bob).count == 1)
    }

    @Test func aLastPullTimeInTheFutureCountsAsRecentAndIsResetToNow() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        let now = Int(Date().timeIntervalSince1970)
        try bob.database().execute("UPDATE contacts SET last_pull_at = ?", [Int64(now + 86_400) * 1000])
        let first = try bob.json(["pull-offers", "--check-now"], now: "@\(now)")
        #expect((first["counts"] as? [String: Int])?["recent"] == 1)
        #expect(try bob.scalar("SELECT last_pull_at FROM contacts") == now * 1000, "reset to now, not kept in the future")
        let after = try bob.json(["pull-offers", "--check-now"], now: "@\(now + 301)")
        #expect((after["counts"] as? [String: Int])?["contacts"] == 1, "not a permanent block")
    }

    @Test func aCancelledHeldOfferIsNeverCollected() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        // Bob never started a server: Alice's offer is held.
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        let held = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-cancelled"), "--files", "1", "--bytes", "1"])
        let offerID = try #require(held["offer_id"] as? String)
        try alice.ok(["offers", "cancel", offerID])
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE ticket_sealed IS NULL AND share_stopped_at IS NOT NULL") == 1, "the waiting ticket is deleted")
        #expect(try alice.run(["offers", "cancel", offerID]).exitCode == 65)
        let pulled = try bob.json(["pull-offers", "--check-now"])
        #expect((pulled["counts"] as? [String: Int])?["collected"] == 0)
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 0)
        #expect(notifications(bob).isEmpty)
    }

    @Test func aDeclineReachesTheSenderAtTheNextContactAndStopsTheShare() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        let first = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-declined"), "--files", "1", "--bytes", "1"])
        let offerID = try #require(first["offer_id"] as? String)
        try bob.ok(["offers", "decline", offerID])
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers WHERE ticket_sealed IS NULL AND state = 'declined'") == 1)
        // Bob holds no grant from Alice, so the next contact is Alice's next offer; the reply carries the decision.
        _ = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-second"), "--files", "1", "--bytes", "1"])
        let outgoing = try offerIDs(alice, "outgoing")
        let declined = try #require(outgoing.first { $0["offer_id"] as? String == offerID })
        #expect(declined["state"] as? String == "declined")
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'declined' AND ticket_sealed IS NULL AND share_stopped_at IS NOT NULL") == 1)
    }
}
