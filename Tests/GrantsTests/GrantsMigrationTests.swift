import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// `grants-002` rebuilds `incoming_offers` to allow `cancelled`: every offer and every notification survives it.
@Suite(.timeLimit(.minutes(15))) struct GrantsMigrationTests {
    @Test func theCancelledStateMigrationKeepsEveryOfferAndNotification() throws {
        let directory = TemporaryDirectory("grants-migration")
        let database = try Database(path: directory.file("store.sqlite"))
        try Migrator([GrantsMigrations.all[0]]).migrate(database, now: 1)
        try database.execute("""
            INSERT INTO incoming_offers (offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, file_count, total_bytes, state, received_at)
            VALUES ('00112233445566778899aabbccddeeff', x'01', x'02', x'03', 1, 2, 'pending', 5),
                   ('ffeeddccbbaa99887766554433221100', x'01', x'02', NULL, 1, 2, 'declined', 6)
            """)
        try database.execute("INSERT INTO notifications (kind, incoming_offer_id, created_at) VALUES ('incoming-offer', 1, 5), ('incoming-offer', 2, 6)")
        #expect(throws: StoreError.self) { try database.execute("UPDATE incoming_offers SET state = 'cancelled', ticket_sealed = NULL WHERE id = 1") }

        try Migrator(GrantsMigrations.all).migrate(database, now: 2)
        #expect(try database.scalar("SELECT count(*) FROM incoming_offers") == 2)
        #expect(try database.scalar("SELECT count(*) FROM notifications WHERE incoming_offer_id IN (1, 2)") == 2)
        #expect(try database.scalar("SELECT count(*) FROM incoming_offers WHERE id = 1 AND ticket_sealed = x'03' AND state = 'pending'") == 1)
        #expect(try database.query("PRAGMA foreign_key_check").isEmpty)
        try database.execute("UPDATE incoming_offers SET state = 'cancelled', ticket_sealed = NULL WHERE id = 1")
        #expect(throws: StoreError.self, "a cancelled offer keeps no ticket") {
            try database.execute("""
                INSERT INTO incoming_offers (offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, file_count, total_bytes, state, received_at)
                VALUES ('aa', x'09', x'02', x'03', 1, 2, 'cancelled', 7)
                """)
        }
        // The cascade still works on the rebuilt tables.
        try database.execute("DELETE FROM incoming_offers WHERE id = 2")
        #expect(try database.scalar("SELECT count(*) FROM notifications") == 1)
    }
}
