import Cryptography
import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// A pull cut off after the offers arrived but before the acknowledgement: nothing lost, nothing doubled.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct PullResumeTests {
    @Test func anOfferWhoseAcknowledgementWasLostIsDeliveredAgainAndStoredOnce() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        _ = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-resume"), "--files", "1", "--bytes", "1"])

        // Bob's side of a pull, stopped right after storing the offer and before acknowledging it.
        let database = try bob.database()
        let vault = try bob.vault()
        let identity = try bob.identity()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: vault).usable(contactID: contactID))
        let connection = try LinkConnection.dial(try LinkAddress.parse(alice.address), expected: alice.endpoint, protocolName: .pull,
                                                 identity: identity, connectTimeout: 5)
        #expect(try ProofExchange.prove(connection, grant: grant, identity: identity) == .accepted)
        try connection.send(["type": "pull", "decisions": []])
        let offers = try connection.receive().objects("offers", maxCount: 5).map(OfferPayload.init)
        #expect(offers.count == 1)
        let receipt = try IncomingOffers(database: database, vault: vault).receive(offers[0], from: alice.endpoint, limits: nil, now: 1)
        guard case .stored = receipt else { Issue.record("not stored"); return }
        connection.close()
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'held'") == 1, "unacknowledged: still held")

        let pass = try bob.json(["pull-offers", "--check-now"])
        let counts = try #require(pass["counts"] as? [String: Int])
        #expect(counts["collected"] == 0 && counts["duplicates"] == 1)
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 1)
        #expect(try bob.scalar("SELECT count(*) FROM notifications") == 1)
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'delivered'") == 1, "acknowledged now")
    }

    @Test func moreHeldOffersThanFitOneFrameAreCollectedInSeveralFrames() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        let big = String(repeating: "t", count: LinkWire.maxTicketBytes)
        for _ in 0..<7 {
            _ = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, big), "--files", "1", "--bytes", "1"])
        }
        let pass = try bob.json(["pull-offers", "--check-now"])
        #expect((pass["counts"] as? [String: Int])?["collected"] == 7)
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'delivered'") == 7)
        #expect(notifications(bob) == ["incoming-offer 7"], "one notification run for the whole pull")
    }
}
