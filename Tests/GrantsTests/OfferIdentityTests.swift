import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// Offer ids are scoped by sender: a second sender reusing an id neither shadows nor blocks the first's offer, and
/// the user names the sender when an id is ambiguous.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct OfferIdentityTests {
    /// Mallory, holding a grant from `receiver`, delivers a live offer with an id of her choosing over the real link.
    func deliver(offerID: String, ticket: String, from mallory: LinkTestNode, to receiver: LinkTestNode) throws -> String {
        let identity = try mallory.identity()
        let connection = try LinkConnection.dial(try LinkAddress.parse(receiver.address), expected: receiver.endpoint, protocolName: .offer,
                                                 identity: identity, connectTimeout: 5)
        defer { connection.close() }
        let database = try mallory.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: try mallory.vault()).usable(contactID: contactID))
        #expect(try ProofExchange.prove(connection, grant: grant, identity: identity) == .accepted)
        try connection.send((["type": "offer"] as JSON).merging(OfferPayload(offerID: offerID, ticket: ticket, senderName: "Alice", fileCount: 1, totalBytes: 1).json))
        let reply = try connection.receive()
        try reply.expect("offer-result")
        return try reply.string("result", maxBytes: 16)
    }

    func incoming(_ node: LinkTestNode) throws -> [[String: Any]] { try node.json(["offers", "list"])["incoming"] as? [[String: Any]] ?? [] }

    @Test func anOfferIDReusedByASecondSenderLeavesBothOffersDecidableByNamingTheSender() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), mallory = LinkTestNode()
        try bob.startServer()
        defer { _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: bob, holder: mallory, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")   // Bob knows Alice by his label

        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "alice-ticket"), "--files", "1", "--bytes", "1"])
        let id = try #require(sent["offer_id"] as? String)
        #expect(try deliver(offerID: id, ticket: "mallory-ticket", from: mallory, to: bob) == "pending")
        #expect(try incoming(bob).count == 2 && incoming(bob).allSatisfy { $0["offer_id"] as? String == id })

        let ambiguous = try bob.run(["offers", "accept", id])
        #expect(ambiguous.exitCode == 65)
        #expect(ambiguous.stderr.contains("several senders used that offer id") && ambiguous.stderr.contains("--from"))
        #expect(ambiguous.stdout.isEmpty, "no ticket printed")
        #expect(try bob.run(["offers", "decline", id]).exitCode == 65)
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers WHERE state = 'pending'") == 2, "nothing decided by an ambiguous command")

        // Named by Bob's label for Alice, and by the fingerprint or endpoint id for the unlisted sender.
        #expect(try bob.ok(["offers", "accept", id, "--from", "alice"]).trimmingCharacters(in: .whitespacesAndNewlines) == "alice-ticket")
        try bob.ok(["offers", "decline", id, "--from", mallory.endpoint.fingerprint])
        let decided = try bob.run(["offers", "accept", id, "--from", mallory.endpointHex])
        #expect(decided.exitCode == 65 && decided.stderr.contains("already accepted or declined"))
        let unknown = try bob.run(["offers", "accept", id, "--from", "nobody"])
        #expect(unknown.exitCode == 65 && unknown.stderr.contains("no known device has that label"))
        let states = Dictionary(uniqueKeysWithValues: try incoming(bob).map { ($0["from"] as? String ?? "", $0["state"] as? String ?? "") })
        #expect(states == [alice.endpointHex: "accepted", mallory.endpointHex: "declined"])

        // Each sender hears only its own decision: Alice's next contact reports hers as accepted, not declined.
        _ = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "alice-second"), "--files", "1", "--bytes", "1"])
        let outgoing = try alice.json(["offers", "list"])["outgoing"] as? [[String: Any]] ?? []
        #expect(outgoing.first { $0["offer_id"] as? String == id }?["state"] as? String == "accepted")
    }
}
