import Cryptography
import Foundation
@testable import Grants
import Runner
import Testing

/// Offers in the store: at most once per sender and id, the receiver's limits, and the never-public share.
@Suite(.timeLimit(.minutes(15))) struct OfferStoreTests {
    let t0 = TestNode.day0

    func offer(_ id: String? = nil, name: String? = nil) throws -> OfferPayload {
        let random = Hex.encode(try SecureRandom.bytes(count: 16))
        return OfferPayload(offerID: id ?? random, ticket: "ticket", senderName: name, fileCount: 1, totalBytes: 1)
    }

    let limits = OfferLimits(maxPending: 3, perHour: 2, cooldownAfter: 2, cooldownMilliseconds: 3_600_000)

    /// A sender that may offer to `node`: a fresh endpoint holding an active grant the node issued.
    func grantedSender(_ node: TestNode) throws -> EndpointID {
        let sender = try randomEndpoint()
        try node.node.issued.issue(to: sender, issuer: node.endpoint, lifetime: .days30, now: t0)
        return sender
    }

    @Test func theSameOfferDeliveredTwiceIsStoredAndNotifiedOnce() throws {
        let bob = try TestNode()
        let incoming = IncomingOffers(database: bob.database, vault: bob.vault)
        let alice = try grantedSender(bob)
        let first = try offer()
        guard case .stored = try incoming.receive(first, from: alice, limits: nil, now: t0) else { Issue.record("not stored"); return }
        #expect(try incoming.receive(first, from: alice, limits: nil, now: t0 + 1) == .duplicate)
        #expect(try bob.database.scalar("SELECT count(*) FROM incoming_offers") == 1)
        #expect(try bob.database.scalar("SELECT count(*) FROM notifications") == 1)
        // The same id from another sender is another offer: one sender cannot shadow another's.
        guard case .stored = try incoming.receive(first, from: try grantedSender(bob), limits: nil, now: t0) else { Issue.record("not stored"); return }
    }

    @Test func theReceiverRefusesBeyondThePerEndpointRateAndThePendingLimit() throws {
        let bob = try TestNode()
        let incoming = IncomingOffers(database: bob.database, vault: bob.vault)
        let alice = try grantedSender(bob), carol = try grantedSender(bob)
        for _ in 0..<2 { guard case .stored = try incoming.receive(try offer(), from: alice, limits: limits, now: t0) else { Issue.record("refused"); return } }
        #expect(try incoming.receive(try offer(), from: alice, limits: limits, now: t0 + 60_000) == .refused(.rateLimit))
        guard case .stored = try incoming.receive(try offer(), from: carol, limits: limits, now: t0) else { Issue.record("refused"); return }
        #expect(try incoming.receive(try offer(), from: carol, limits: limits, now: t0) == .refused(.pendingLimit), "3 pending in all")
        #expect(try bob.database.scalar("SELECT count(*) FROM incoming_offers") == 3)
    }

    @Test func anOfferIsTakenInOnlyFromASenderHoldingAnActiveGrantAndNotBlocked() throws {
        let bob = try TestNode()
        let incoming = IncomingOffers(database: bob.database, vault: bob.vault)
        #expect(try incoming.receive(try offer(), from: try randomEndpoint(), limits: nil, now: t0) == .refused(.notGranted), "a stranger")
        let revoked = try grantedSender(bob)
        try bob.node.issued.revoke(peer: revoked, now: t0)
        #expect(try incoming.receive(try offer(), from: revoked, limits: nil, now: t0) == .refused(.notGranted), "revoked")
        let lapsed = try grantedSender(bob)
        #expect(try incoming.receive(try offer(), from: lapsed, limits: nil, now: t0 + 31 * TestNode.dayMs) == .refused(.notGranted), "idle-expired")
        let blocked = try grantedSender(bob)
        let known = try offer()
        guard case .stored = try incoming.receive(known, from: blocked, limits: nil, now: t0) else { Issue.record("not stored"); return }
        try bob.node.blocks.block(blocked, now: t0)
        #expect(try incoming.receive(try offer(), from: blocked, limits: limits, now: t0) == .refused(.notGranted), "blocked")
        #expect(try incoming.receive(known, from: blocked, limits: nil, now: t0) == .refused(.notGranted), "even a re-delivery")
        #expect(try bob.database.scalar("SELECT count(*) FROM incoming_offers") == 1)
        #expect(try bob.database.scalar("SELECT count(*) FROM notifications") == 1)
    }

    @Test func aSenderCancellingItsOffersCannotBreakARunOfDeclines() throws {
        let bob = try TestNode()
        let incoming = IncomingOffers(database: bob.database, vault: bob.vault)
        let generous = OfferLimits(maxPending: 10, perHour: 10, cooldownAfter: 2, cooldownMilliseconds: 3_600_000)
        let alice = try grantedSender(bob)
        var rows: [Int64] = []
        let offers = try (0..<3).map { _ in try offer() }
        for sent in offers {
            guard case .stored(let row) = try incoming.receive(sent, from: alice, limits: generous, now: t0) else { Issue.record("refused"); return }
            rows.append(row)
        }
        try incoming.decline(rowID: rows[0], now: t0 + 1)
        try incoming.decline(rowID: rows[1], now: t0 + 2)
        // The sender cancels its third offer after the two declines: not a decision of this node's.
        #expect(try incoming.cancel([offers[2].offerID], from: alice, now: t0 + 3) == 1)
        #expect(try incoming.receive(try offer(), from: alice, limits: generous, now: t0 + 4) == .refused(.cooldown))
        let reported = try incoming.unreportedDecisions(from: alice)
        #expect(reported.map(\.offerID) == [offers[0].offerID, offers[1].offerID], "a cancellation is not reported back as a decision")
        #expect(throws: JobError.self) { _ = try incoming.decidable(offers[2].offerID) }
    }

    @Test func repeatedDeclinesStartACooldownThatEnds() {
        let now: Int64 = 10_000_000
        let declined = [(declined: true, at: now - 1000), (declined: true, at: now - 2000)]
        #expect(limits.refusal(pending: 0, lastHour: 0, recentDecisions: declined, now: now) == .cooldown)
        #expect(limits.refusal(pending: 0, lastHour: 0, recentDecisions: declined, now: now + 3_600_000) == nil, "the cooldown ends")
        #expect(limits.refusal(pending: 0, lastHour: 0, recentDecisions: [(true, now - 1000), (false, now - 2000)], now: now) == nil)
        #expect(limits.refusal(pending: 0, lastHour: 0, recentDecisions: [(true, now - 1000)], now: now) == nil, "one decline is not repeated")
    }

    @Test func anOfferCreatedShareIsNeverPublic() throws {
        let alice = try TestNode()
        let contactID = try alice.node.contacts.upsert(try randomEndpoint(), label: "bob", address: "127.0.0.1:1", maxContacts: 10, now: t0)
        let outgoing = OutgoingOffers(database: alice.database, vault: alice.vault)
        try outgoing.record(try offer(), contactID: contactID, state: .held, now: t0)
        try outgoing.record(try offer(), contactID: contactID, state: .delivered, now: t0)
        #expect(OfferShare.access == "approval-required")
        #expect(try alice.database.scalar("SELECT count(*) FROM held_offers WHERE share_access != 'approval-required'") == 0)
        // The store itself refuses a public share row, whatever code tries.
        #expect(throws: StoreError.self) {
            try alice.database.execute("UPDATE held_offers SET share_access = 'public'")
        }
        #expect(throws: StoreError.self) {
            try alice.database.execute("""
                INSERT INTO held_offers (offer_id, contact_id, file_count, total_bytes, share_access, state, created_at, updated_at)
                VALUES ('x', ?, 1, 1, 'public', 'held', 0, 0)
                """, [contactID])
        }
    }

    @Test func aClaimedNameIsKeptBesideTheLabelAndAChangeIsSignalled() throws {
        let bob = try TestNode()
        let alice = try randomEndpoint()
        let id = try bob.node.contacts.upsert(alice, label: "Mum", address: "127.0.0.1:1", maxContacts: 10, now: t0)
        try bob.node.contacts.recordClaimedName("Alice", contactID: id)
        var contact = try #require(try bob.node.contacts.find(alice))
        #expect(contact.label == "Mum" && contact.remoteName == "Alice" && !contact.remoteNameChanged)
        try bob.node.contacts.recordClaimedName("Your Bank", contactID: id)
        contact = try #require(try bob.node.contacts.find(alice))
        #expect(contact.label == "Mum", "never overwritten by a claimed name")
        #expect(contact.remoteName == "Your Bank" && contact.remoteNameChanged)
    }

    @Test func theContactLimitRefusesANewContactButNotAnUpdate() throws {
        let bob = try TestNode()
        let first = try randomEndpoint()
        _ = try bob.node.contacts.upsert(first, label: "one", address: "127.0.0.1:1", maxContacts: 1, now: t0)
        #expect(throws: JobError.self) { try bob.node.contacts.upsert(try randomEndpoint(), label: "two", address: "127.0.0.1:1", maxContacts: 1, now: t0) }
        _ = try bob.node.contacts.upsert(first, label: "one again", address: "127.0.0.1:2", maxContacts: 1, now: t0)
        #expect(try bob.node.contacts.find(first)?.address == "127.0.0.1:2")
    }

    @Test func secretsTicketsAndEndpointIdsAreSealedAtRest() throws {
        let alice = try TestNode()
        let bob = try randomEndpoint()
        let bundle = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days90, now: t0)
        let contactID = try alice.node.contacts.upsert(bob, label: "bob", address: "127.0.0.1:1", maxContacts: 10, now: t0)
        try OutgoingOffers(database: alice.database, vault: alice.vault).record(
            OfferPayload(offerID: "00112233445566778899aabbccddeeff", ticket: "CANARY-TICKET-123", senderName: nil, fileCount: 1, totalBytes: 1),
            contactID: contactID, state: .held, now: t0)
        try alice.database.write { db in
            try db.execute("CREATE TABLE scan_control (value TEXT)")
            try db.execute("INSERT INTO scan_control (value) VALUES (?)", ["PLAINTEXT-CONTROL-7f3a"])
        }
        let file = try #require(FileManager.default.contents(atPath: alice.inProcess.storePath) )
        let wal = FileManager.default.contents(atPath: alice.inProcess.storePath + "-wal") ?? Data()
        let bytes = [UInt8](file) + [UInt8](wal)
        func contains(_ needle: [UInt8]) -> Bool {
            guard needle.count <= bytes.count else { return false }
            return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
        // Positive control: a plaintext planted in the same store is found by the same scan.
        #expect(contains(Array("PLAINTEXT-CONTROL-7f3a".utf8)), "the scan cannot find a planted plaintext, so its misses prove nothing")
        #expect(!contains(bundle.secret.copyBytes()), "the grant secret")
        #expect(!contains(bundle.grantID), "the grant id")
        #expect(!contains(bob.bytes), "the endpoint id")
        #expect(!contains(Array("CANARY-TICKET-123".utf8)), "the ticket")
        #expect(!contains(Array(bob.hex.utf8)))
    }
}
