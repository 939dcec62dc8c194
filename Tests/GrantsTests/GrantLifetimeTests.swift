import Cryptography
@testable import Grants
import Runner
import Testing

/// Idle lifetime over a real store: renewal on a successful proof, lapse at the boundary, persistence.
@Suite(.timeLimit(.minutes(15))) struct GrantLifetimeTests {
    let day = TestNode.dayMs
    let t0 = TestNode.day0

    func prove(_ bundle: GrantBundle, at now: Int64, on issuer: TestNode, from remote: EndpointID? = nil) throws -> ProofAnswer {
        let challenge = try SecureRandom.bytes(count: 32)
        let proof = GrantProof.prove(secret: bundle.secret, challenge: challenge, issuer: bundle.issuer, holder: remote ?? bundle.holder)
        return try GrantChecker(node: issuer.node).check(remote: remote ?? bundle.holder, grantID: bundle.grantID, challenge: challenge, proof: proof, now: now).0
    }

    @Test func aSuccessfulProofRenewsTheIdleDeadlineAndARenewedGrantSurvivesPastItsOriginalExpiry() throws {
        let alice = try TestNode()
        let bob = try randomEndpoint()
        let bundle = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days30, now: t0)
        #expect(bundle.expiresAt == t0 + 30 * day)
        #expect(try prove(bundle, at: t0 + 29 * day, on: alice) == .accepted)
        let renewed: Int64? = try alice.database.scalar("SELECT expires_at FROM grants_issued")
        #expect(renewed == t0 + 59 * day, "renewal keeps the grant's own 30-day lifetime")
        #expect(try prove(bundle, at: t0 + 45 * day, on: alice) == .accepted, "past the original deadline")
    }

    @Test func anIdleGrantLapsesExactlyAtItsDeadline() throws {
        let alice = try TestNode()
        let bob = try randomEndpoint()
        let bundle = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days90, now: t0)
        #expect(try prove(bundle, at: t0 + 90 * day - 1, on: alice) == .accepted)
        let second = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days90, now: t0)
        #expect(try prove(second, at: t0 + 90 * day, on: alice) == .lapsed)
        let deadline: Int64? = try alice.database.scalar("SELECT expires_at FROM grants_issued WHERE id = 2")
        #expect(deadline == t0 + 90 * day, "a refused proof renews nothing")
    }

    @Test func aGrantThatNeverExpiresIsAcceptedYearsLater() throws {
        let alice = try TestNode()
        let bundle = try alice.node.issued.issue(to: try randomEndpoint(), issuer: alice.endpoint, lifetime: .never, now: t0)
        #expect(bundle.expiresAt == nil)
        #expect(try prove(bundle, at: t0 + 3650 * day, on: alice) == .accepted)
    }

    @Test func revokedAndBlockedAreDistinguishableAndBlockedMatchesExpiredAndUnknown() throws {
        let alice = try TestNode()
        let bob = try randomEndpoint()
        let carol = try randomEndpoint()
        let revoked = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days90, now: t0)
        try alice.node.issued.revoke(peer: bob, now: t0 + 1)
        #expect(try prove(revoked, at: t0 + 2, on: alice) == .revoked)

        let blocked = try alice.node.issued.issue(to: carol, issuer: alice.endpoint, lifetime: .days90, now: t0)
        #expect(try prove(blocked, at: t0 + 2, on: alice) == .accepted)
        try alice.node.blocks.block(carol, now: t0 + 3)
        #expect(try prove(blocked, at: t0 + 4, on: alice) == .lapsed)
        let expired = try alice.node.issued.issue(to: carol, issuer: alice.endpoint, lifetime: .days30, now: t0)
        try alice.node.blocks.unblock(carol)
        #expect(try prove(expired, at: t0 + 31 * day, on: alice) == .lapsed)
        let unknown = GrantBundle(issuer: alice.endpoint, holder: carol, grantID: try SecureRandom.bytes(count: 16),
                                  secret: try SecretBytes.random(count: 32), expiresAt: nil)
        #expect(try prove(unknown, at: t0 + 5, on: alice) == .lapsed)
    }

    @Test func aGrantBoundToBobIsRefusedWhenCarolPresentsIt() throws {
        let alice = try TestNode()
        let bob = try randomEndpoint()
        let bundle = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days90, now: t0)
        #expect(try prove(bundle, at: t0 + 1, on: alice, from: try randomEndpoint()) == .lapsed)
    }

    @Test func grantsContactsAndBlocksSurviveClosingAndReopeningTheStore() throws {
        let storeKey = try SecretBytes.random(count: 32)
        let inProcess = InProcessJobHolder()
        let bob = try randomEndpoint()
        let carol = try randomEndpoint()
        var endpoint: EndpointID
        var bundle: GrantBundle
        do {
            let database = try inProcess.job.database()
            let node = try Node(database: database, vault: Vault(keyring: try StoreKeyring(storeKey: storeKey)), now: t0)
            endpoint = node.identity.endpoint
            bundle = try node.issued.issue(to: bob, issuer: endpoint, lifetime: .days90, now: t0)
            let held = GrantBundle(issuer: carol, holder: endpoint, grantID: try SecureRandom.bytes(count: 16), secret: try SecretBytes.random(count: 32), expiresAt: nil)
            let contactID = try node.contacts.upsert(carol, label: "carol", address: "127.0.0.1:1", maxContacts: 10, now: t0)
            try node.held.store(held, contactID: contactID, now: t0)
            try node.blocks.block(bob, now: t0)
        }
        let database = try inProcess.job.database()
        let node = try Node(database: database, vault: Vault(keyring: try StoreKeyring(storeKey: storeKey)), now: t0 + 1)
        #expect(node.identity.endpoint == endpoint, "the endpoint key is stable across reopen")
        #expect(try node.issued.record(grantID: bundle.grantID)?.holder == bob)
        #expect(try node.contacts.find(carol)?.label == "carol")
        #expect(try node.held.usable(contactID: try #require(try node.contacts.find(carol)).id) != nil)
        #expect(try node.blocks.contains(bob))
    }
}

/// Keeps one in-process store alive across several `Database` opens.
final class InProcessJobHolder {
    let job = InProcessJob(modules: [RunnerModule.module, GrantsModule.module])
}

import TestSupport
