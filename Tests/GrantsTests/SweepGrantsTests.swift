import Cryptography
import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// `sweep-grants` over a real store: what it lapses and purges, batching, idempotence, dry run.
@Suite(.timeLimit(.minutes(15))) struct SweepGrantsTests {
    let day = TestNode.dayMs
    let t0 = TestNode.day0

    func count(_ db: Database, _ sql: String) throws -> Int { try db.scalar(sql) ?? 0 }

    /// A node with: 3 grants idle past their deadline, 2 live, 1 never-expiring, 1 revoked 40 days ago,
    /// 1 revoked 10 days ago, a held grant the peer revoked, and finished offers old and new.
    func populated() throws -> (TestNode, GrantBundle) {
        let alice = try TestNode()
        let bob = try randomEndpoint()
        var lapsing: GrantBundle?
        for _ in 0..<3 { lapsing = try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days30, now: t0) }
        for _ in 0..<2 { try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .days90, now: t0) }
        try alice.node.issued.issue(to: bob, issuer: alice.endpoint, lifetime: .never, now: t0)
        let old = try randomEndpoint()
        try alice.node.issued.issue(to: old, issuer: alice.endpoint, lifetime: .days90, now: t0)
        try alice.node.issued.revoke(peer: old, now: t0)
        let recent = try randomEndpoint()
        try alice.node.issued.issue(to: recent, issuer: alice.endpoint, lifetime: .days90, now: t0)
        try alice.node.issued.revoke(peer: recent, now: t0 + 30 * day)

        let carol = try randomEndpoint()
        let contactID = try alice.node.contacts.upsert(carol, label: "carol", address: "127.0.0.1:1", maxContacts: 10, now: t0)
        let heldBundle = GrantBundle(issuer: carol, holder: alice.endpoint, grantID: try SecureRandom.bytes(count: 16),
                                     secret: try SecretBytes.random(count: 32), expiresAt: nil)
        try alice.node.held.store(heldBundle, contactID: contactID, now: t0)
        try alice.node.held.markRevokedByPeer(grantID: heldBundle.grantID, contactID: contactID, now: t0 + day)
        for (index, (state, at)) in [("declined", t0), ("cancelled", t0), ("held", t0), ("delivered", t0 + 35 * day)].enumerated() {
            let finished = state == "declined" || state == "cancelled"
            try alice.database.execute("""
                INSERT INTO held_offers (offer_id, contact_id, ticket_sealed, file_count, total_bytes, share_access, state, share_stopped_at, created_at, updated_at)
                VALUES (?, ?, ?, 1, 1, 'approval-required', ?, ?, ?, ?)
                """, ["offer\(index)", contactID, finished ? nil : [UInt8](repeating: 1, count: 4), state, finished ? at : nil, at, at])
        }
        try alice.database.execute("""
            INSERT INTO incoming_offers (offer_id, from_endpoint_index, from_endpoint_sealed, file_count, total_bytes, state, received_at, decided_at)
            VALUES ('in1', ?1, ?2, 1, 1, 'declined', ?3, ?3), ('in2', ?1, ?2, 1, 1, 'pending', ?3, NULL)
            """, [alice.vault.index(carol), try alice.vault.seal(carol), t0])
        return (alice, lapsing!)
    }

    func sweep(_ alice: TestNode, at now: Int64, dryRun: Bool = false) throws -> Counts {
        try SweepGrants.run(alice.database, now: now, grantCutoff: now - 30 * day, offerCutoff: now - 30 * day, dryRun: dryRun,
                            batchSize: 2, between: {})
    }

    @Test func aPassLapsesIdleGrantsPurgesOldTombstonesAndFinishedOffersAndDropsRevokedHeldGrants() throws {
        let (alice, lapsing) = try populated()
        let now = t0 + 40 * day
        let counts = try sweep(alice, at: now)
        #expect(counts["lapsed"] == 3)
        #expect(counts["purged_grants"] == 1, "only the tombstone older than 30 days")
        #expect(counts["dropped_held"] == 1)
        #expect(counts["purged_outgoing_offers"] == 2, "declined and cancelled from day 0; held and the recent delivery stay")
        #expect(counts["purged_incoming_offers"] == 1)
        #expect(try count(alice.database, "SELECT count(*) FROM grants_issued WHERE revoke_reason = 'expired' AND revoked_at = \(now)") == 3)
        #expect(try count(alice.database, "SELECT count(*) FROM grants_issued WHERE revoked_at IS NULL") == 3)

        // A lapsed grant is a tombstone: its holder still hears "lapsed", even with the clock set back before the deadline.
        let challenge = try SecureRandom.bytes(count: 32)
        let proof = GrantProof.prove(secret: lapsing.secret, challenge: challenge, issuer: lapsing.issuer, holder: lapsing.holder)
        let answer = try GrantChecker(node: alice.node).check(remote: lapsing.holder, grantID: lapsing.grantID, challenge: challenge, proof: proof, now: t0 + day)
        #expect(answer.0 == .lapsed && answer.1 == .expired)
    }

    @Test func aSecondPassChangesNothingAndTheTombstonesArePurgedAfterTheRetention() throws {
        let (alice, _) = try populated()
        _ = try sweep(alice, at: t0 + 40 * day)
        let again = try sweep(alice, at: t0 + 40 * day)
        #expect(again.entries.allSatisfy { $0.value == 0 }, "\(again.json.rendered())")
        let later = try sweep(alice, at: t0 + 71 * day)
        #expect(later["purged_grants"] == 4, "the 3 lapsed at day 40 and the one revoked at day 30")
    }

    @Test func aDryRunReportsTheCountsAndChangesNothing() throws {
        let (alice, _) = try populated()
        let before = try count(alice.database, "SELECT total_changes()")
        let snapshot = try alice.database.query("SELECT * FROM grants_issued ORDER BY id").map(\.values)
        let counts = try sweep(alice, at: t0 + 40 * day, dryRun: true)
        #expect(counts["lapsed"] == 3 && counts["purged_grants"] == 1 && counts["dropped_held"] == 1)
        #expect(counts["purged_outgoing_offers"] == 2 && counts["purged_incoming_offers"] == 1)
        #expect(try alice.database.query("SELECT * FROM grants_issued ORDER BY id").map(\.values) == snapshot)
        #expect(try count(alice.database, "SELECT total_changes()") == before)
    }

    @Test func theJobRunsThroughTheRunnerWithTheSettingsRetention() throws {
        let job = InProcessJob(modules: [RunnerModule.module, GrantsModule.module])
        let database = try job.database()
        let vault = Vault(keyring: try StoreKeyring(storeKey: try SecretBytes.random(count: 32)))
        let node = try Node(database: database, vault: vault, now: t0)
        let bob = try randomEndpoint()
        try database.write { _ in for _ in 0..<2500 { try node.issued.issue(to: bob, issuer: node.identity.endpoint, lifetime: .days30, now: t0) } }
        let (report, _) = try job.pass("sweep-grants", now: Date(unixMilliseconds: t0 + 31 * day), json: true)
        #expect(report.result.counts["lapsed"] == 2500, "three batches of at most 1,000")
        let (second, _) = try job.pass("sweep-grants", now: Date(unixMilliseconds: t0 + 31 * day + 29 * day))
        #expect(second.result.counts["purged_grants"] == 0, "the default retention is 30 days")
        let (third, _) = try job.pass("sweep-grants", now: Date(unixMilliseconds: t0 + 31 * day + 31 * day))
        #expect(third.result.counts["purged_grants"] == 2500)
    }

    struct Stop: Error {}

    @Test func aPassStoppedBetweenBatchesAndRunAgainEndsInTheSameState() throws {
        let (stopped, _) = try populated()
        let (control, _) = try populated()
        let now = t0 + 40 * day
        var calls = 0
        #expect(throws: Stop.self) {
            _ = try SweepGrants.run(stopped.database, now: now, grantCutoff: now - 30 * day, offerCutoff: now - 30 * day, dryRun: false,
                                    batchSize: 1, between: { calls += 1; if calls == 3 { throw Stop() } })
        }
        #expect(try count(stopped.database, "SELECT count(*) FROM grants_issued WHERE revoke_reason = 'expired'") == 2, "two batches of one were committed")
        _ = try SweepGrants.run(stopped.database, now: now, grantCutoff: now - 30 * day, offerCutoff: now - 30 * day, dryRun: false,
                                batchSize: 1, between: {})
        _ = try sweep(control, at: now)
        for table in ["grants_issued", "grants_held", "held_offers", "incoming_offers"] {
            let shape = "SELECT count(*), count(revoked_at), total(coalesce(expires_at, 0)) FROM grants_issued"
            let sql = table == "grants_issued" ? shape : "SELECT count(*) FROM \(table)"
            #expect(try stopped.database.query(sql).map(\.values) == control.database.query(sql).map(\.values), "\(table)")
        }
    }
}
