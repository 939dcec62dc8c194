import Cryptography
import Runner

/// Offers this node received (`incoming_offers`): pending until the user accepts or declines (or the sender cancels);
/// each stored at most once per sender and offer id — offer ids are scoped by sender — so a second delivery changes
/// nothing and one sender can neither shadow nor touch another's offer.
package struct IncomingOffers {
    let database: Database
    let vault: Vault

    package init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    /// What happened to an offer handed to `receive`.
    package enum Receipt: Equatable, Sendable {
        /// Stored now, with this row id (notify the user).
        case stored(Int64)
        /// Already stored earlier: nothing changed.
        case duplicate
        case refused(OfferLimits.Refusal)
    }

    /// Whether `sender` could deliver an offer live at `now`: it is not blocked and holds an active grant issued by
    /// this node. No offer is taken in from anyone else, whichever side opened the connection.
    package func senderMayDeliver(_ sender: EndpointID, now: Int64) throws -> Bool {
        guard try !BlockList(database: database, vault: vault).contains(sender) else { return false }
        return try IssuedGrants(database: database, vault: vault).hasActive(peer: sender, now: now)
    }

    /// Stores `offer` from `sender` as pending unless the sender may not deliver (`notGranted`) or a limit refuses it
    /// (limits do not apply to a re-delivery of an offer already stored). The same rule serves live and pulled offers.
    package func receive(_ offer: OfferPayload, from sender: EndpointID, limits: OfferLimits?, now: Int64) throws -> Receipt {
        try database.writeIfNeeded { db in
            guard try senderMayDeliver(sender, now: now) else { return .refused(.notGranted) }
            let senderIndex = vault.index(sender)
            let known: Int = try db.scalar("SELECT count(*) FROM incoming_offers WHERE from_endpoint_index = ? AND offer_id = ?", [senderIndex, offer.offerID]) ?? 0
            if known > 0 { return .duplicate }
            if let limits {
                let pending: Int = try db.scalar("SELECT count(*) FROM incoming_offers WHERE state = 'pending'") ?? 0
                let lastHour: Int = try db.scalar("SELECT count(*) FROM incoming_offers WHERE from_endpoint_index = ? AND received_at > ?",
                                                  [senderIndex, now - 3_600_000]) ?? 0
                // Only this node's own decisions: a sender cancelling its offers cannot break a run of declines.
                let recent = try db.query("""
                    SELECT state = 'declined', decided_at FROM incoming_offers WHERE from_endpoint_index = ? AND state IN ('accepted', 'declined')
                    ORDER BY decided_at DESC LIMIT ?
                    """, [senderIndex, limits.cooldownAfter]).map { (declined: try $0.get(0, as: Bool.self), at: try $0.get(1, as: Int64.self)) }
                if let refusal = limits.refusal(pending: pending, lastHour: lastHour, recentDecisions: recent, now: now) { return .refused(refusal) }
            }
            try db.execute("""
                INSERT INTO incoming_offers (offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, sender_name, file_count,
                                             total_bytes, state, received_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)
                """, [offer.offerID, senderIndex, try vault.seal(sender), try vault.seal(Array(offer.ticket.utf8), .ticket), offer.senderName,
                      offer.fileCount, offer.totalBytes, now])
            let rowID = db.lastInsertRowID
            try db.execute("INSERT INTO notifications (kind, incoming_offer_id, created_at) VALUES ('incoming-offer', ?, ?)", [rowID, now])
            return .stored(rowID)
        }
    }

    /// Decisions on `sender`'s offers not yet reported to it.
    package func unreportedDecisions(from sender: EndpointID) throws -> [OfferDecision] {
        try database.query("""
            SELECT offer_id, state FROM incoming_offers
            WHERE from_endpoint_index = ? AND state IN ('accepted', 'declined') AND decision_reported_at IS NULL
            ORDER BY id LIMIT ?
            """, [vault.index(sender), LinkWire.maxDecisions]).compactMap { row in
            guard let kind = OfferDecision.Kind(rawValue: try row.get(1)) else { return nil }
            return OfferDecision(offerID: try row.get(0), decision: kind)
        }
    }

    /// Records that `decisions` reached `sender`.
    package func markReported(_ decisions: [OfferDecision], from sender: EndpointID, now: Int64) throws {
        try database.writeIfNeeded { db in
            for decision in decisions {
                try db.execute("UPDATE incoming_offers SET decision_reported_at = ? WHERE from_endpoint_index = ? AND offer_id = ?",
                               [now, vault.index(sender), decision.offerID])
            }
        }
    }

    /// An offer the user can still decide: its row, sender and ticket.
    package struct Decidable {
        package let rowID: Int64
        package let sender: EndpointID
        package let ticket: SecretBytes
    }

    /// The pending offer with `offerID` from the sender `from` picks (any sender when nil). A bad-input error when
    /// there is none, when several senders used that id (name one with `from`), or when it was decided or cancelled.
    package func decidable(_ offerID: String, from: ((EndpointID) -> Bool)? = nil) throws -> Decidable {
        let rows = try database.query("SELECT id, from_endpoint_sealed, ticket_sealed, state FROM incoming_offers WHERE offer_id = ? ORDER BY id",
                                      [offerID])
        let matching = try rows.map { (row: $0, sender: try vault.openEndpoint(try $0.get(1))) }.filter { from?($0.sender) ?? true }
        guard let match = matching.first else {
            throw JobError.badInput("offer-unknown", from == nil || rows.isEmpty
                ? "no incoming offer has that id; see 'job offers list'"
                : "no incoming offer from that sender has that id; see 'job offers list'")
        }
        guard matching.count == 1 else {
            throw JobError.badInput("offer-ambiguous",
                                    "several senders used that offer id; name one with --from LABEL|FINGERPRINT|ENDPOINT (see 'job offers list')")
        }
        switch try match.row.get(3, as: String.self) {
        case "pending": break
        case "cancelled": throw JobError.badInput("offer-cancelled", "the sender cancelled that offer; its ticket is gone and there is nothing to decide")
        default: throw JobError.badInput("offer-decided", "that offer was already accepted or declined")
        }
        return Decidable(rowID: try match.row.get(0), sender: match.sender, ticket: try vault.open(try match.row.get(2), .ticket))
    }

    /// Marks `sender`'s pending offers among `offerIDs` cancelled and deletes their tickets (the sender's cancel
    /// notice); another sender's offers with the same ids are untouched. Returns how many changed.
    @discardableResult
    package func cancel(_ offerIDs: [String], from sender: EndpointID, now: Int64) throws -> Int {
        try database.writeIfNeeded { db in
            var changed = 0
            for id in offerIDs {
                changed += try db.execute("""
                    UPDATE incoming_offers SET state = 'cancelled', ticket_sealed = NULL, decided_at = ?1, decision_reported_at = ?1
                    WHERE from_endpoint_index = ?2 AND offer_id = ?3 AND state = 'pending'
                    """, [now, vault.index(sender), id])
            }
            return changed
        }
    }

    /// Accepts a pending offer; the decision reaches the sender at the next link contact.
    package func accept(rowID: Int64, now: Int64) throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("UPDATE incoming_offers SET state = 'accepted', decided_at = ? WHERE id = ? AND state = 'pending'", [now, rowID])
        }
    }

    /// Declines a pending offer and deletes its ticket.
    package func decline(rowID: Int64, now: Int64) throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("UPDATE incoming_offers SET state = 'declined', ticket_sealed = NULL, decided_at = ? WHERE id = ? AND state = 'pending'", [now, rowID])
        }
    }

    /// Deletes every offer from `sender` (contact deletion).
    package func deleteAll(from sender: EndpointID) throws {
        try database.writeIfNeeded { db in _ = try db.execute("DELETE FROM incoming_offers WHERE from_endpoint_index = ?", [vault.index(sender)]) }
    }

    /// One incoming offer as listed (never the ticket).
    package struct Listing: Sendable {
        package let offerID: String
        package let sender: EndpointID
        package let senderName: String?
        package let state: String
        package let fileCount: Int64
        package let totalBytes: Int64
        package let receivedAt: Int64
    }

    package func list() throws -> [Listing] {
        try database.query("SELECT offer_id, from_endpoint_sealed, sender_name, state, file_count, total_bytes, received_at FROM incoming_offers ORDER BY id DESC").map { row in
            Listing(offerID: try row.get(0), sender: try vault.openEndpoint(try row.get(1)), senderName: try row.get(2), state: try row.get(3),
                    fileCount: try row.get(4), totalBytes: try row.get(5), receivedAt: try row.get(6))
        }
    }
}
