import Foundation
@testable import Grants
import Testing
import TestSupport

/// A decline reaches the sender at once over the link (best effort); notifications can be listed and marked seen.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct DeclineNoticeTests {
    func outgoingState(_ node: LinkTestNode) throws -> String? {
        (try node.json(["offers", "list"])["outgoing"] as? [[String: Any]])?.first?["state"] as? String
    }

    @Test func aDeclineReachesAReachableSenderAtOnceAndStopsItsShare() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice")
        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-d1"), "--files", "1", "--bytes", "1"])
        let offerID = try #require(sent["offer_id"] as? String)

        let declined = try bob.json(["offers", "decline", offerID])
        #expect(declined["sender_notified"] as? Bool == true)
        // No pull, no further offer: Alice already knows, and the share's ticket is gone.
        #expect(try outgoingState(alice) == "declined")
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE ticket_sealed IS NOT NULL") == 0)
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers WHERE decision_reported_at IS NULL") == 0)
    }

    @Test func aSenderNotReachableNowLearnsTheDeclineAtTheNextContactInstead() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice")
        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-d2"), "--files", "1", "--bytes", "1"])
        let offerID = try #require(sent["offer_id"] as? String)
        _ = try alice.stopServer()

        let declined = try bob.json(["offers", "decline", offerID])
        #expect(declined["sender_notified"] as? Bool == false)
        #expect(try outgoingState(alice) == "delivered")
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers WHERE decision_reported_at IS NULL") == 1)
        // Alice's next offer carries the decision back.
        _ = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-d3"), "--files", "1", "--bytes", "1"])
        let states = (try alice.json(["offers", "list"])["outgoing"] as? [[String: Any]])?.compactMap { $0["state"] as? String } ?? []
        #expect(states.contains("declined"))
    }

    @Test func notificationsAreListedAndMarkedSeen() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try bob.startServer()
        defer { _ = try? bob.stopServer() }
        let bundle = try bob.ok(["grants", "issue", "--to", alice.endpointHex, "--label", "alice"])
        _ = try alice.ok(["grants", "accept", "--label", "bob", "--addr", bob.address], stdin: bundle)
        for index in 1...2 {
            _ = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-n\(index)"), "--files", "1", "--bytes", "1"])
        }
        let listed = try #require(try bob.json(["offers", "notifications", "--unseen"])["notifications"] as? [[String: Any]])
        #expect(listed.count == 2)
        #expect(listed.allSatisfy { $0["seen"] as? Bool == false && $0["kind"] as? String == "incoming-offer" && $0["from_label"] as? String == "alice" })
        #expect(!(try bob.ok(["offers", "notifications"])).contains("ticket-n1"), "never the ticket")

        let marked = try bob.json(["offers", "notifications", "--unseen", "--mark-seen"])
        #expect(marked["marked_seen"] as? Int == 2)
        #expect((try bob.json(["offers", "notifications", "--unseen"])["notifications"] as? [[String: Any]])?.isEmpty == true)
        #expect(try bob.ok(["offers", "notifications", "--unseen"]).contains("no unseen notifications"))
        let all = try #require(try bob.json(["offers", "notifications"])["notifications"] as? [[String: Any]])
        #expect(all.count == 2 && all.allSatisfy { $0["seen"] as? Bool == true })
        #expect(try bob.json(["offers", "notifications", "--mark-seen"])["marked_seen"] as? Int == 0)
    }
}
