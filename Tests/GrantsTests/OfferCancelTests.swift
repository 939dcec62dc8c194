import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// Cancelling an offer the receiver already holds: a best-effort cancel notice withdraws it there, only its own
/// sender can cancel it, and accepting a cancelled offer fails with a clear message.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct OfferCancelTests {
    func incomingState(_ node: LinkTestNode, _ id: String) throws -> String? {
        let incoming = try node.json(["offers", "list"])["incoming"] as? [[String: Any]] ?? []
        return incoming.first { $0["offer_id"] as? String == id }?["state"] as? String
    }

    /// Alice and Bob both serve and hold each other's grants.
    func twoServingNodes() throws -> (LinkTestNode, LinkTestNode) {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice")
        return (alice, bob)
    }

    func send(_ alice: LinkTestNode, _ ticket: String) throws -> String {
        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, ticket), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered")
        return try #require(sent["offer_id"] as? String)
    }

    @Test func cancellingADeliveredOfferWithdrawsItOnTheReceiverAndItsAcceptFailsClearly() throws {
        let (alice, bob) = try twoServingNodes()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        let id = try send(alice, "ticket-to-cancel")
        #expect(try incomingState(bob, id) == "pending")

        let cancelled = try alice.json(["offers", "cancel", id])
        #expect(cancelled["state"] as? String == "cancelled" && cancelled["peer_notified"] as? Bool == true)
        #expect(try incomingState(bob, id) == "cancelled")
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers WHERE state = 'cancelled' AND ticket_sealed IS NULL") == 1, "its ticket is gone")

        let accept = try bob.run(["offers", "accept", id])
        #expect(accept.exitCode == 65)
        #expect(accept.stderr.contains("the sender cancelled that offer"))
        #expect(!accept.stdout.contains("ticket-to-cancel"))
        #expect(try bob.run(["offers", "decline", id]).exitCode == 65)
        // Nothing is reported back as Bob's decision.
        _ = try send(alice, "ticket-next")
        let outgoing = try alice.json(["offers", "list"])["outgoing"] as? [[String: Any]] ?? []
        #expect(outgoing.first { $0["offer_id"] as? String == id }?["state"] as? String == "cancelled")
    }

    @Test func anotherEndpointCannotCancelAnOfferByNamingItsID() throws {
        let (alice, bob) = try twoServingNodes()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        let mallory = LinkTestNode()
        try pair(issuer: bob, holder: mallory, label: "bob")
        let id = try send(alice, "ticket-kept")
        // Mallory learnt the id and sends Bob a cancel notice for it over her own authenticated link.
        let connection = try LinkConnection.dial(try LinkAddress.parse(bob.address), expected: bob.endpoint, protocolName: .cancel,
                                                 identity: try mallory.identity(), connectTimeout: 5)
        try connection.send(LinkWire.cancel([id]))
        let reply = try connection.receive()
        connection.close()
        #expect(reply.type == "done", "the same reply whatever matched")
        #expect(try incomingState(bob, id) == "pending")
        #expect(try bob.ok(["offers", "accept", id]).trimmingCharacters(in: .whitespacesAndNewlines) == "ticket-kept")
    }

    @Test func aCancelThatCannotReachTheReceiverStillStopsTheShareAndSaysSo() throws {
        let (alice, bob) = try twoServingNodes()
        defer { _ = try? alice.stopServer() }
        let id = try send(alice, "ticket-unreachable")
        try bob.stopServer()
        let cancelled = try alice.run(["offers", "cancel", id])
        #expect(cancelled.exitCode == 0)
        #expect(cancelled.stdout.contains("the contact could not be told now"))
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'cancelled' AND ticket_sealed IS NULL AND share_stopped_at IS NOT NULL") == 1)
        #expect(try alice.run(["offers", "cancel", id]).exitCode == 65, "already cancelled")
    }
}
