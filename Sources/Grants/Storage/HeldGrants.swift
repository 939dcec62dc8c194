import Cryptography
import Runner

/// A grant this node holds from a peer: what it proves with when it dials that peer.
package struct HeldGrant: Sendable {
    package let rowID: Int64
    package let grantID: [UInt8]
    package let secret: SecretBytes
    package let contactID: Int64
    package let expiresAt: Int64?
}

/// The holder's side of grants (`grants_held`).
package struct HeldGrants {
    let database: Database
    let vault: Vault

    package init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    /// Stores the grant in `bundle` for `contactID`; accepting the same bundle twice keeps one row.
    package func store(_ bundle: GrantBundle, contactID: Int64, now: Int64) throws {
        try database.writeIfNeeded { db in
            try db.execute("""
                INSERT INTO grants_held (grant_index, grant_sealed, secret_sealed, contact_id, created_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (grant_index) DO UPDATE SET contact_id = excluded.contact_id, peer_revoked_at = NULL
                """, [vault.index(bundle.grantID, .grantID), try vault.seal(bundle.grantID, .grantID),
                      try vault.seal(bundle.secret.copyBytes(), .grantSecret), contactID, now, bundle.expiresAt])
        }
    }

    /// The newest usable grant held from the contact (not reported revoked by the peer), if any.
    package func usable(contactID: Int64) throws -> HeldGrant? {
        guard let row = try database.queryOne("""
            SELECT id, grant_sealed, secret_sealed, contact_id, expires_at FROM grants_held
            WHERE contact_id = ? AND peer_revoked_at IS NULL ORDER BY id DESC LIMIT 1
            """, [contactID]) else { return nil }
        return HeldGrant(rowID: try row.get(0), grantID: try vault.open(try row.get(1), .grantID).copyBytes(),
                         secret: try vault.open(try row.get(2), .grantSecret), contactID: try row.get(3), expiresAt: try row.get(4))
    }

    /// Deletes a dead held grant (the peer answered `revoked` or `lapsed`).
    package func delete(rowID: Int64) throws {
        try database.writeIfNeeded { db in _ = try db.execute("DELETE FROM grants_held WHERE id = ?", [rowID]) }
    }

    /// Records the peer's revoke message for `grantID`, only if the grant is held from `contactID` (the sender);
    /// the sweep drops it later. Returns whether a held grant matched.
    @discardableResult
    package func markRevokedByPeer(grantID: [UInt8], contactID: Int64, now: Int64) throws -> Bool {
        try database.writeIfNeeded { db in
            try db.execute("UPDATE grants_held SET peer_revoked_at = ? WHERE grant_index = ? AND contact_id = ? AND peer_revoked_at IS NULL",
                           [now, vault.index(grantID, .grantID), contactID]) > 0
        }
    }

    /// One held grant as listed (never the secret).
    package struct Listing: Sendable {
        package let grantID: String
        package let contact: Contact
        package let createdAt: Int64
        package let expiresAt: Int64?
        /// `usable` or `revoked` (the peer told us).
        package let state: String
    }

    /// Every held grant with its contact, newest first.
    package func list(contacts: Contacts) throws -> [Listing] {
        try database.query("SELECT grant_sealed, contact_id, created_at, expires_at, peer_revoked_at FROM grants_held ORDER BY id DESC").compactMap { row in
            guard let contact = try contacts.find(id: try row.get(1)) else { return nil }
            let revoked: Int64? = try row.get(4)
            return Listing(grantID: Hex.encode(try vault.open(try row.get(0), .grantID).copyBytes()), contact: contact,
                           createdAt: try row.get(2), expiresAt: try row.get(3), state: revoked == nil ? "usable" : "revoked")
        }
    }
}
