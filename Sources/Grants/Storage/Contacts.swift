import Runner

/// A remembered peer: its endpoint id, the user's own label, the name it claims and where it was last reached.
package struct Contact: Sendable {
    package let id: Int64
    package let endpoint: EndpointID
    /// The local user's label; never overwritten by a name the peer claims (docs/protocols/grants-and-link.md §4.1).
    package let label: String
    /// The name the peer last claimed (untrusted).
    package let remoteName: String?
    package let remoteNameChanged: Bool
    package let address: String?
    /// `active`, or `revoked`/`lapsed` after the peer refused our grant.
    package let status: String
    package let lastPullAt: Int64?
    package let createdAt: Int64
    /// The last successful connection to it, and the last failed dial (Unix ms).
    package let lastTransferAt: Int64?
    package let lastUnreachableAt: Int64?
    /// When a dial last found another key answering at its address (Unix ms).
    package let replacedAt: Int64?
}

/// The `contacts` table: created by accepting a grant, looked up by endpoint blind index.
package struct Contacts {
    let database: Database
    let vault: Vault

    package init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    static let columns = "id, endpoint_sealed, local_label, remote_display_name, remote_name_changed, last_known_addr, status, last_pull_at, created_at, last_transfer_at, last_unreachable_at, replaced_at"

    func contact(_ row: Row) throws -> Contact {
        Contact(id: try row.get(0), endpoint: try vault.openEndpoint(try row.get(1)), label: try row.get(2), remoteName: try row.get(3),
                remoteNameChanged: try row.get(4), address: try row.get(5), status: try row.get(6), lastPullAt: try row.get(7),
                createdAt: try row.get(8), lastTransferAt: try row.get(9), lastUnreachableAt: try row.get(10),
                replacedAt: try row.get(11))
    }

    /// The contact for `endpoint`, if remembered.
    package func find(_ endpoint: EndpointID) throws -> Contact? {
        try database.queryOne("SELECT \(Contacts.columns) FROM contacts WHERE endpoint_index = ?", [vault.index(endpoint)]).map(contact)
    }

    /// The contact with row id `id`.
    package func find(id: Int64) throws -> Contact? {
        try database.queryOne("SELECT \(Contacts.columns) FROM contacts WHERE id = ?", [id]).map(contact)
    }

    /// Every contact, by label.
    package func all() throws -> [Contact] {
        try database.query("SELECT \(Contacts.columns) FROM contacts ORDER BY local_label, id").map(contact)
    }

    /// Every contact whose sealed endpoint opens, and how many rows are damaged (left as they are, for the
    /// caller to report one by one instead of failing on the first).
    package func allOpenable() throws -> (contacts: [Contact], damaged: Int) {
        var contacts: [Contact] = []
        var damaged = 0
        for row in try database.query("SELECT \(Contacts.columns) FROM contacts ORDER BY local_label, id") {
            do { contacts.append(try contact(row)) } catch where Vault.isDamagedRow(error) { damaged += 1 }
        }
        return (contacts, damaged)
    }

    /// Resolves what the user typed: a 64-hex endpoint id, or a label that names exactly one contact.
    package func resolve(_ text: String) throws -> Contact {
        if text.utf8.count == 64, let endpoint = try? EndpointID(hex: text) {
            if let found = try find(endpoint) { return found }
            throw JobError.badInput("contact-unknown", "no contact has that endpoint id; see 'job contacts list'")
        }
        let matches = try all().filter { $0.label == text }
        guard let first = matches.first else { throw JobError.badInput("contact-unknown", "no contact has that label or endpoint id; see 'job contacts list'") }
        guard matches.count == 1 else { throw JobError.badInput("contact-ambiguous", "several contacts share that label; name the contact by its endpoint id") }
        return first
    }

    /// Creates the contact for `endpoint` with `label`, or keeps the existing one (its label stays the user's)
    /// and refreshes its address. Refuses a new contact beyond `maxContacts`.
    package func upsert(_ endpoint: EndpointID, label: String, address: String, maxContacts: Int, now: Int64) throws -> Int64 {
        try database.writeIfNeeded { db in
            if let existing = try find(endpoint) {
                try db.execute("UPDATE contacts SET local_label = ?, last_known_addr = ?, status = 'active' WHERE id = ?", [label, address, existing.id])
                return existing.id
            }
            let count: Int = try db.scalar("SELECT count(*) FROM contacts") ?? 0
            guard count < maxContacts else {
                throw JobError.badInput("contacts-limit", "the contact limit (limits.max-contacts) is reached; delete a contact or raise the limit")
            }
            try db.execute("""
                INSERT INTO contacts (endpoint_index, endpoint_sealed, local_label, last_known_addr, status, created_at)
                VALUES (?, ?, ?, ?, 'active', ?)
                """, [vault.index(endpoint), try vault.seal(endpoint), label, address, now])
            return db.lastInsertRowID
        }
    }

    /// Records the peer's claimed name: stored beside the label, with a "changed" signal when it differs from before.
    package func recordClaimedName(_ name: String?, contactID: Int64) throws {
        guard let name, !name.isEmpty else { return }
        try database.writeIfNeeded { db in
            try db.execute("""
                UPDATE contacts SET remote_name_changed = CASE WHEN remote_display_name IS NOT NULL AND remote_display_name != ?1 THEN 1 ELSE remote_name_changed END,
                                    remote_display_name = ?1
                WHERE id = ?2
                """, [name, contactID])
        }
    }

    /// Refreshes the cached address after a successful connection.
    package func recordAddress(_ address: String, contactID: Int64, now: Int64) throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("UPDATE contacts SET last_known_addr = ?, last_transfer_at = ? WHERE id = ?", [address, now, contactID])
        }
    }

    /// Records that dialling the contact failed at `now` (it is then shown as "delivered later" until a connection
    /// succeeds); `replaced` when another key answered at its address (shown as "no longer recognized" until then).
    package func recordUnreachable(contactID: Int64, now: Int64, replaced: Bool = false) throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("UPDATE contacts SET last_unreachable_at = ?1, replaced_at = CASE WHEN ?2 THEN ?1 ELSE replaced_at END WHERE id = ?3",
                               [now, replaced, contactID])
        }
    }

    /// Marks a contact whose grant the peer refused (`revoked` or `lapsed`).
    package func markStatus(_ status: ProofAnswer, contactID: Int64) throws {
        try database.writeIfNeeded { db in _ = try db.execute("UPDATE contacts SET status = ? WHERE id = ?", [status.rawValue, contactID]) }
    }

    /// Renames a contact (the local label only).
    package func rename(_ contactID: Int64, to label: String) throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("UPDATE contacts SET local_label = ?, remote_name_changed = 0 WHERE id = ?", [label, contactID])
        }
    }

    /// Deletes one contact row (its held grants and offers go with it by foreign key).
    package func delete(_ contactID: Int64) throws {
        try database.writeIfNeeded { db in _ = try db.execute("DELETE FROM contacts WHERE id = ?", [contactID]) }
    }
}

/// Checks a label the user typed: printable, 1–100 characters.
enum LabelRule {
    static func validate(_ label: String) throws -> String {
        let trimmed = label.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.count <= 100, !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw JobError.usage("a label is 1 to 100 printable characters")
        }
        return trimmed
    }
}

import Foundation
