import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// What a pull may take in: only offers from a contact that could deliver them live at that moment (an active grant
/// from this node, not blocked), within the same limits and cooldowns as live offers; the rest stays with the sender.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct PullIntakeTests {
    func counts(_ pass: [String: Any]) -> [String: Int] { pass["counts"] as? [String: Int] ?? [:] }

    func outgoingStates(_ node: LinkTestNode) throws -> [String: Int] {
        let outgoing = try node.json(["offers", "list"])["outgoing"] as? [[String: Any]] ?? []
        return outgoing.reduce(into: [:]) { $0[$1["state"] as? String ?? "?", default: 0] += 1 }
    }

    /// Alice serves and holds `count` offers for Bob, who runs no server; both issued each other a grant.
    func aliceHoldsOffersForBob(_ count: Int) throws -> (alice: LinkTestNode, bob: LinkTestNode) {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        try pair(issuer: alice, holder: bob, label: "alice")
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        for index in 0..<count {
            let held = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-held-\(index)"), "--files", "1", "--bytes", "1"])
            #expect(held["state"] as? String == "held")
        }
        return (alice, bob)
    }

    @Test func aRevokedThenBlockedContactsHeldOffersAreNeverCollectedAndItIsNeverDialled() throws {
        let (alice, bob) = try aliceHoldsOffersForBob(2)
        defer { _ = try? alice.stopServer() }
        let t0 = Int(Date().timeIntervalSince1970)

        // Revoked: Alice holds no active grant from Bob, so she could not deliver live; Bob does not dial her.
        _ = try bob.json(["grants", "revoke", "--peer", alice.endpointHex])
        let revoked = try bob.json(["pull-offers", "--check-now"], now: "@\(t0)")
        #expect(counts(revoked)["collected"] == 0 && counts(revoked)["no_grant"] == 1 && counts(revoked)["contacts"] == 0)

        // Revoked and blocked.
        try bob.ok(["block", alice.endpointHex])
        let blocked = try bob.json(["pull-offers", "--check-now"], now: "@\(t0 + 400)")
        #expect(counts(blocked)["collected"] == 0 && counts(blocked)["blocked"] == 1 && counts(blocked)["contacts"] == 0)

        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 0)
        #expect(try bob.scalar("SELECT count(*) FROM notifications") == 0)
        #expect(notifications(bob).isEmpty, "no notification raised")
        #expect(try bob.scalar("SELECT count(*) FROM contacts WHERE last_pull_at IS NOT NULL") == 0, "no pull was even started")
        #expect(try alice.scalar("SELECT count(*) FROM grants_issued WHERE last_used_at IS NOT NULL") == 0, "Alice never saw Bob prove his grant")
        #expect(try outgoingStates(alice) == ["held": 2], "Alice keeps holding both")
    }

    @Test func pullOffersNeverDialsABlockedEndpointEvenWithAnActiveGrant() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        // A bare UDP socket where Alice would be: any dial would leave a datagram in it.
        let (listener, address) = try RawPeer.staller(on: "127.0.0.1")
        defer { close(listener) }
        try bob.database().execute("UPDATE contacts SET last_known_addr = ?", [address])
        try bob.ok(["block", alice.endpointHex])
        let pass = try bob.json(["pull-offers", "--check-now"])
        #expect(counts(pass)["blocked"] == 1 && counts(pass)["unreachable"] == 0)
        #expect(!RawPeer.hasPendingConnection(listener), "nothing dialled")

        // Unblocked, the same contact is dialled.
        try bob.ok(["unblock", alice.endpointHex])
        try bob.ok(["settings", "set", "link.connect-timeout-seconds", "1"])
        let after = try bob.json(["pull-offers", "--check-now"])
        #expect(counts(after)["blocked"] == 0 && counts(after)["contacts"] == 1)
        #expect(RawPeer.hasPendingConnection(listener), "dialled once unblocked")
    }

    @Test func aContactRegrantedAfterARevocationIsCollectedFromAgain() throws {
        let (alice, bob) = try aliceHoldsOffersForBob(2)
        defer { _ = try? alice.stopServer() }
        let t0 = Int(Date().timeIntervalSince1970)
        _ = try bob.json(["grants", "revoke", "--peer", alice.endpointHex])
        #expect(counts(try bob.json(["pull-offers", "--check-now"], now: "@\(t0)"))["no_grant"] == 1)
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        let pass = try bob.json(["pull-offers", "--check-now"], now: "@\(t0 + 1)")
        #expect(counts(pass)["collected"] == 2 && counts(pass)["no_grant"] == 0)
        #expect(try outgoingStates(alice) == ["delivered": 2])
    }

    @Test func pulledOffersMeetTheLimitsAndCooldownsAndTheSenderKeepsHoldingTheRest() throws {
        let (alice, bob) = try aliceHoldsOffersForBob(8)
        defer { _ = try? alice.stopServer() }
        for (key, value) in [("limits.max-pending-offers", "4"), ("limits.offers-per-hour", "3"),
                             ("limits.decline-cooldown-after", "2"), ("limits.decline-cooldown-minutes", "60")] {
            try bob.ok(["settings", "set", key, value])
        }
        let t0 = Int(Date().timeIntervalSince1970)
        func pull(_ at: Int) throws -> [String: Int] { counts(try bob.json(["pull-offers", "--check-now"], now: "@\(at)")) }
        func pending() throws -> [String] {
            (try bob.json(["offers", "list"])["incoming"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "pending" }.compactMap { $0["offer_id"] as? String }
        }

        // The hourly rate: 3 of 8 taken in; the other 5 refused in the acknowledgement and still held by Alice.
        var pass = try pull(t0)
        #expect(pass["collected"] == 3 && pass["refused"] == 5)
        #expect(try outgoingStates(alice) == ["delivered": 3, "held": 5])
        #expect(notifications(bob) == ["incoming-offer 3"])

        // An hour later: the pending limit (4) lets one more in.
        pass = try pull(t0 + 3_601)
        #expect(pass["collected"] == 1 && pass["refused"] == 4)
        #expect(try pending().count == 4)
        #expect(try outgoingStates(alice) == ["delivered": 4, "held": 4])

        // Two declines in a row start the cooldown: nothing is taken in, and Alice learns the declines.
        for id in try pending().prefix(2) { try bob.ok(["offers", "decline", id], now: "@\(t0 + 3_700)") }
        pass = try pull(t0 + 4_000)
        #expect(pass["collected"] == 0 && pass["refused"] == 4)
        #expect(try outgoingStates(alice) == ["declined": 2, "delivered": 2, "held": 4])

        // After the cooldown: room for two more pending offers.
        pass = try pull(t0 + 3_700 + 3_601)
        #expect(pass["collected"] == 2 && pass["refused"] == 2)
        #expect(try outgoingStates(alice) == ["declined": 2, "delivered": 4, "held": 2])
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 6, "nothing over the limits was stored")
        #expect(notifications(bob) == ["incoming-offer 3", "incoming-offer 1", "incoming-offer 2"])
    }

    @Test func fiveHundredHeldOffersMeetAPendingLimitOfFiftyInOnePull() throws {
        let (alice, bob) = try aliceHoldsOffersForBob(0)
        defer { _ = try? alice.stopServer() }
        // Alice's store holds 500 offers for Bob (written straight into her real store file).
        let database = try alice.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let outgoing = OutgoingOffers(database: database, vault: try alice.vault())
        try database.write { _ in
            for index in 0..<500 {
                try outgoing.record(OfferPayload(offerID: String(format: "%032x", index + 1), ticket: "flood-\(index)", senderName: "Alice",
                                                 fileCount: 1, totalBytes: 1), contactID: contactID, state: .held, now: 1)
            }
        }
        try bob.ok(["settings", "set", "limits.offers-per-hour", "1000"])
        let pass = counts(try bob.json(["pull-offers", "--check-now"]))
        #expect(pass["collected"] == 50 && pass["refused"] == 450)
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 50)
        #expect(try outgoingStates(alice) == ["delivered": 50, "held": 450], "every refused offer is still held by its sender")
    }
}
