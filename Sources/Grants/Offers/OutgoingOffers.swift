import Cryptography
import Runner

/// Offers this node sent or holds for a contact (`held_offers`): held until collected, then delivered, then
/// decided by the receiver; cancelling stops the share and deletes the waiting ticket.
package struct OutgoingOffers {
    let database: Database
    let vault: Vault

    package init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    package enum State: String, Sendable { case held, delivered, accepted, declined, cancelled }

    /// Records an offer to `contactID` as `held` (awaiting pickup) or `delivered` (the receiver has it).
    package func record(_ offer: OfferPayload, contactID: Int64, state: State, now: Int64) throws {
        try database.writeIfNeeded { db in
            try db.execute("""
                INSERT INTO held_offers (offer_id, contact_id, ticket_sealed, sender_name, file_count, total_bytes, share_access, state, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [offer.offerID, contactID, try vault.seal(Array(offer.ticket.utf8), .ticket), offer.senderName, offer.fileCount,
                      offer.totalBytes, OfferShare.access, state.rawValue, now, now])
        }
    }

    /// Up to `limit` held offers for `contactID` after row `after`, oldest first, with their row ids and tickets.
    package func held(contactID: Int64, after: Int64 = 0, limit: Int) throws -> [(rowID: Int64, offer: OfferPayload)] {
        try database.query("""
            SELECT id, offer_id, ticket_sealed, sender_name, file_count, total_bytes FROM held_offers
            WHERE contact_id = ? AND state = 'held' AND ticket_sealed IS NOT NULL AND id > ? ORDER BY id LIMIT ?
            """, [contactID, after, limit]).map { row in
            (try row.get(0), OfferPayload(offerID: try row.get(1), ticket: String(decoding: try vault.open(try row.get(2), .ticket).copyBytes(), as: UTF8.self),
                                          senderName: try row.get(3), fileCount: try row.get(4), totalBytes: try row.get(5)))
        }
    }

    /// Drops an offer that never left this node (the receiver refused it, or the grant proved dead); false when it
    /// is no longer `held`.
    @discardableResult
    package func forget(_ offerID: String, contactID: Int64) throws -> Bool {
        try database.writeIfNeeded { db in
            try db.execute("DELETE FROM held_offers WHERE offer_id = ? AND contact_id = ? AND state = 'held'", [offerID, contactID]) > 0
        }
    }

    /// Marks collected offers delivered (only still-held offers of that contact; a cancelled one stays cancelled).
    package func markDelivered(_ offerIDs: [String], contactID: Int64, now: Int64) throws -> Int {
        try database.writeIfNeeded { db in
            var changed = 0
            for id in offerIDs {
                changed += try db.execute("UPDATE held_offers SET state = 'delivered', updated_at = ? WHERE offer_id = ? AND contact_id = ? AND state = 'held'",
                                          [now, id, contactID])
            }
            return changed
        }
    }

    /// Applies a receiver's decision to one of that contact's offers; a decline stops the share and drops the ticket.
    @discardableResult
    package func apply(_ decision: OfferDecision, contactID: Int64, now: Int64) throws -> Bool {
        try database.writeIfNeeded { db in
            switch decision.decision {
            case .accepted:
                return try db.execute("UPDATE held_offers SET state = 'accepted', updated_at = ? WHERE offer_id = ? AND contact_id = ? AND state IN ('held', 'delivered')",
                                      [now, decision.offerID, contactID]) > 0
            case .declined:
                return try db.execute("""
                    UPDATE held_offers SET state = 'declined', ticket_sealed = NULL, share_stopped_at = ?1, updated_at = ?1
                    WHERE offer_id = ?2 AND contact_id = ?3 AND state IN ('held', 'delivered')
                    """, [now, decision.offerID, contactID]) > 0
            }
        }
    }

    /// Cancels an offer not yet decided: the share stops and the waiting ticket is deleted, so it can never be collected.
    package func cancel(_ offerID: String, now: Int64) throws -> Bool {
        try database.writeIfNeeded { db in
            try db.execute("""
                UPDATE held_offers SET state = 'cancelled', ticket_sealed = NULL, share_stopped_at = ?1, updated_at = ?1
                WHERE offer_id = ?2 AND state IN ('held', 'delivered')
                """, [now, offerID]) > 0
        }
    }

    /// One outgoing offer as listed (never the ticket).
    package struct Listing: Sendable {
        package let offerID: String
        package let contactID: Int64
        package let state: String
        package let fileCount: Int64
        package let totalBytes: Int64
        package let createdAt: Int64
        package let updatedAt: Int64
    }

    package func list() throws -> [Listing] {
        try database.query("SELECT offer_id, contact_id, state, file_count, total_bytes, created_at, updated_at FROM held_offers ORDER BY id DESC").map { row in
            Listing(offerID: try row.get(0), contactID: try row.get(1), state: try row.get(2), fileCount: try row.get(3),
                    totalBytes: try row.get(4), createdAt: try row.get(5), updatedAt: try row.get(6))
        }
    }

    /// The state of one offer, if it exists.
    package func state(_ offerID: String) throws -> String? {
        try database.scalar("SELECT state FROM held_offers WHERE offer_id = ?", [offerID])
    }

    /// The contact one offer was made to, if the offer exists.
    package func contactID(_ offerID: String) throws -> Int64? {
        try database.scalar("SELECT contact_id FROM held_offers WHERE offer_id = ?", [offerID])
    }
}
