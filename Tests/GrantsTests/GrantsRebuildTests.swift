import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// The two migrations that rebuild a table (SQLite's twelve steps: new table, copy, drop, rename) on a store that has
/// rows in the rebuilt table and in the tables around it. Migrations run with foreign keys off (`Migrator`), so
/// `grants-002` no longer copies `notifications` aside: what it leaves must be what the shipped one left.
@Suite(.timeLimit(.minutes(15))) struct GrantsRebuildTests {
    let directory = TemporaryDirectory("grants-rebuild")

    /// `grants-002-incoming-offer-cancelled` as it shipped, copying `notifications` (which references
    /// `incoming_offers`, ON DELETE CASCADE) aside and rebuilding it too, because migrations then ran with foreign
    /// keys on and dropping `incoming_offers` would have deleted every notification.
    static let shippedIncomingOfferCancelled = """
        CREATE TEMP TABLE notifications_copy AS SELECT * FROM notifications;
        DROP TABLE notifications;

        CREATE TABLE incoming_offers_new (
            id INTEGER PRIMARY KEY,
            offer_id TEXT NOT NULL,
            from_endpoint_index BLOB NOT NULL,
            from_endpoint_sealed BLOB NOT NULL,
            ticket_sealed BLOB,
            sender_name TEXT,
            file_count INTEGER NOT NULL CHECK (file_count >= 0),
            total_bytes INTEGER NOT NULL CHECK (total_bytes >= 0),
            state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'declined', 'cancelled')),
            received_at INTEGER NOT NULL,
            decided_at INTEGER,
            decision_reported_at INTEGER,
            UNIQUE (from_endpoint_index, offer_id),
            CHECK (state NOT IN ('declined', 'cancelled') OR ticket_sealed IS NULL)
        ) STRICT;
        INSERT INTO incoming_offers_new SELECT id, offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, sender_name,
            file_count, total_bytes, state, received_at, decided_at, decision_reported_at FROM incoming_offers;
        DROP TABLE incoming_offers;
        ALTER TABLE incoming_offers_new RENAME TO incoming_offers;
        CREATE INDEX incoming_offers_unreported ON incoming_offers (from_endpoint_index) WHERE state != 'pending' AND decision_reported_at IS NULL;
        CREATE INDEX incoming_offers_decided ON incoming_offers (decided_at) WHERE state != 'pending';
        CREATE INDEX incoming_offers_received ON incoming_offers (from_endpoint_index, received_at);

        CREATE TABLE notifications (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('incoming-offer')),
            incoming_offer_id INTEGER REFERENCES incoming_offers (id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            seen_at INTEGER
        ) STRICT;
        INSERT INTO notifications SELECT id, kind, incoming_offer_id, created_at, seen_at FROM notifications_copy;
        DROP TABLE notifications_copy;
        CREATE INDEX notifications_by_offer ON notifications (incoming_offer_id);
        """

    /// A store at the version before `migration` (every earlier Grants migration applied), with rows in
    /// `grants-001`'s tables: two contacts, a held grant, held offers, incoming offers and their notifications
    /// (one seen, one about no offer).
    func store(_ file: String, before migration: String) throws -> Database {
        let index = try #require(GrantsMigrations.all.firstIndex { $0.name == migration })
        let db = try Database(path: directory.file(file))
        try Migrator(Array(GrantsMigrations.all[..<index])).migrate(db, now: 1)
        try db.execute("""
            INSERT INTO contacts (id, endpoint_index, endpoint_sealed, local_label, created_at) VALUES (1, x'a1', x'b1', 'ann', 1), (2, x'a2', x'b2', 'bob', 1);
            INSERT INTO grants_held (grant_index, grant_sealed, secret_sealed, contact_id, created_at) VALUES (x'c1', x'c2', x'c3', 2, 1);
            INSERT INTO held_offers (offer_id, contact_id, ticket_sealed, sender_name, file_count, total_bytes, share_access, state, share_stopped_at, created_at, updated_at)
                VALUES ('o1', 1, x'd1', 'me', 1, 10, 'approval-required', 'held', NULL, 1, 1),
                       ('o2', 2, NULL, NULL, 2, 20, 'approval-required', 'declined', 2, 1, 2),
                       ('o3', 2, NULL, 'me', 3, 30, 'approval-required', 'cancelled', 3, 1, 3);
            INSERT INTO incoming_offers (id, offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, sender_name, file_count, total_bytes, state, received_at, decided_at)
                VALUES (1, 'i1', x'e1', x'e2', x'e3', 'carol', 1, 2, 'pending', 5, NULL),
                       (2, 'i2', x'e1', x'e2', NULL, NULL, 1, 2, 'declined', 6, 7),
                       (3, 'i3', x'f1', x'f2', x'f3', 'dave', 4, 8, 'accepted', 8, 9);
            INSERT INTO notifications (id, kind, incoming_offer_id, created_at, seen_at)
                VALUES (1, 'incoming-offer', 1, 5, NULL), (2, 'incoming-offer', 2, 6, 7), (3, 'incoming-offer', 3, 8, NULL), (4, 'incoming-offer', NULL, 9, NULL);
            """)
        return db
    }

    /// A new store with every Grants migration applied.
    func newStore(_ file: String) throws -> Database {
        let db = try Database(path: directory.file(file))
        try Migrator(GrantsMigrations.all).migrate(db, now: 2)
        return db
    }

    @Test func theCancelledStateRebuildLeavesTheSchemaAndRowsTheShippedMigrationLeft() throws {
        let shipped = try store("shipped.sqlite", before: "grants-002-incoming-offer-cancelled")
        // As the migrator ran it when it shipped: in a write transaction on a connection with foreign keys on.
        #expect(try shipped.scalar("PRAGMA foreign_keys") as Int? == 1)
        try shipped.write { db in
            try db.execute(Self.shippedIncomingOfferCancelled)
            _ = try db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES ('grants-002-incoming-offer-cancelled', 2)", [])
        }
        try Migrator(GrantsMigrations.all).migrate(shipped, now: 2)

        let upgraded = try store("upgraded.sqlite", before: "grants-002-incoming-offer-cancelled")
        #expect(try Migrator(GrantsMigrations.all).migrate(upgraded, now: 2).first == "grants-002-incoming-offer-cancelled")

        let snapshot = try StoreSnapshot(upgraded)
        #expect(snapshot == (try StoreSnapshot(shipped)), "the same schema and the same rows as the shipped migration")
        #expect(snapshot.schema == (try StoreSnapshot(newStore("new.sqlite"))).schema, "the same schema as a new store")
        #expect(snapshot.rows["notifications"]?.count == 4)
        #expect(snapshot.rows["incoming_offers"]?.count == 3)
        #expect(try upgraded.query("PRAGMA foreign_key_check").isEmpty)
        // The notifications reference the rebuilt table: its cascade reaches them.
        try upgraded.execute("DELETE FROM incoming_offers WHERE id = 3")
        #expect(try upgraded.scalar("SELECT count(*) FROM notifications") == 3)
    }

    @Test func theUndeliverableStateRebuildKeepsEveryHeldOfferAndGivesTheSchemaOfANewStore() throws {
        let upgraded = try store("upgraded.sqlite", before: "grants-005-held-offer-undeliverable")
        let before = try StoreSnapshot(upgraded)
        #expect(try Migrator(GrantsMigrations.all).migrate(upgraded, now: 2).first == "grants-005-held-offer-undeliverable")
        let snapshot = try StoreSnapshot(upgraded)
        #expect(snapshot.rows["held_offers"] == before.rows["held_offers"])
        #expect(snapshot.rows["contacts"]?.count == 2 && snapshot.rows["grants_held"]?.count == 1 && snapshot.rows["notifications"]?.count == 4)
        #expect(snapshot.schema == (try StoreSnapshot(newStore("new.sqlite"))).schema)
        #expect(try upgraded.query("PRAGMA foreign_key_check").isEmpty)
        // The rebuilt table still references `contacts`: deleting a contact deletes its offers.
        try upgraded.execute("DELETE FROM contacts WHERE id = 2")
        #expect(try upgraded.scalar("SELECT count(*) FROM held_offers") == 1)
    }
}
