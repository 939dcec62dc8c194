import Cryptography
import Runner

/// The issuer's side of grants (`grants_issued`): minting, looking up for a proof, renewal and revocation.
package struct IssuedGrants {
    let database: Database
    let vault: Vault

    package init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    /// Mints a grant for `holder`: a 128-bit id, a 256-bit secret, an idle deadline of `now + lifetime`.
    @discardableResult
    package func issue(to holder: EndpointID, issuer: EndpointID, lifetime: GrantLifetime, label: String? = nil, now: Int64) throws -> GrantBundle {
        let grantID: [UInt8]
        let secret: SecretBytes
        do {
            grantID = try SecureRandom.bytes(count: GrantProof.grantIDCount)
            secret = try SecretBytes.random(count: GrantProof.secretCount)
        } catch { throw JobError.internal("the system random source failed") }
        let expiresAt = GrantLifetime.deadline(lifetimeMs: lifetime.milliseconds, from: now)
        try database.writeIfNeeded { db in
            try db.execute("""
                INSERT INTO grants_issued (grant_index, grant_sealed, secret_sealed, endpoint_index, endpoint_sealed,
                                           lifetime_ms, created_at, expires_at, holder_label)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [vault.index(grantID, .grantID), try vault.seal(grantID, .grantID), try vault.seal(secret.copyBytes(), .grantSecret),
                      vault.index(holder), try vault.seal(holder), lifetime.milliseconds, now, expiresAt, label])
        }
        return GrantBundle(issuer: issuer, holder: holder, grantID: grantID, secret: secret, expiresAt: expiresAt)
    }

    /// The issued grant under `grantID`, live or tombstoned, if it exists.
    package func record(grantID: [UInt8]) throws -> IssuedGrantRecord? {
        guard grantID.count == GrantProof.grantIDCount else { return nil }
        guard let row = try database.queryOne("""
            SELECT id, secret_sealed, endpoint_sealed, lifetime_ms, expires_at, revoke_reason
            FROM grants_issued WHERE grant_index = ?
            """, [vault.index(grantID, .grantID)]) else { return nil }
        return IssuedGrantRecord(rowID: try row.get(0), secret: try vault.open(try row.get(1), .grantSecret),
                                 holder: try vault.openEndpoint(try row.get(2)), lifetimeMs: try row.get(3),
                                 expiresAt: try row.get(4), revokeReason: try row.get(5))
    }

    /// Whether `peer` holds a live grant from this node at `now`: not tombstoned and its idle deadline not passed.
    package func hasActive(peer: EndpointID, now: Int64) throws -> Bool {
        let count: Int = try database.scalar("""
            SELECT count(*) FROM grants_issued WHERE endpoint_index = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
            """, [vault.index(peer), now]) ?? 0
        return count > 0
    }

    /// Renews an accepted grant's idle deadline to `now + its own lifetime` (issuer-side only, docs/protocols/grants-and-link.md §3.5).
    package func renew(_ record: IssuedGrantRecord, now: Int64) throws {
        try database.writeIfNeeded { db in
            try db.execute("UPDATE grants_issued SET expires_at = ?, last_used_at = ? WHERE id = ? AND revoked_at IS NULL",
                           [GrantLifetime.deadline(lifetimeMs: record.lifetimeMs, from: now), now, record.rowID])
        }
    }

    /// Tombstones every live grant issued to `peer` (reason `revoked`); returns their ids for the best-effort revoke message.
    @discardableResult
    package func revoke(peer: EndpointID, now: Int64) throws -> [[UInt8]] {
        try database.writeIfNeeded { db in
            var ids: [[UInt8]] = []
            for row in try db.query("SELECT grant_sealed FROM grants_issued WHERE endpoint_index = ? AND revoked_at IS NULL", [vault.index(peer)]) {
                ids.append(try vault.open(try row.get(0), .grantID).copyBytes())
            }
            try db.execute("UPDATE grants_issued SET revoked_at = ?, revoke_reason = 'revoked' WHERE endpoint_index = ? AND revoked_at IS NULL",
                           [now, vault.index(peer)])
            return ids
        }
    }

    /// Deletes every issued grant for `peer`, live or tombstoned (contact deletion, after revocation).
    package func deleteAll(peer: EndpointID) throws {
        try database.writeIfNeeded { db in _ = try db.execute("DELETE FROM grants_issued WHERE endpoint_index = ?", [vault.index(peer)]) }
    }

    /// One issued grant as listed (never the secret).
    package struct Listing: Sendable {
        package let grantID: String
        package let peer: EndpointID
        package let createdAt: Int64
        package let expiresAt: Int64?
        package let lifetime: String
        /// `active`, `revoked` or `expired`.
        package let state: String
        /// The label given when it was issued, if any.
        package let label: String?
    }

    /// Every issued grant, newest first.
    package func list(now: Int64) throws -> [Listing] {
        try database.query("SELECT grant_sealed, endpoint_sealed, created_at, expires_at, lifetime_ms, revoke_reason, holder_label FROM grants_issued ORDER BY id DESC").map { row in
            let expiresAt: Int64? = try row.get(3)
            let reason: String? = try row.get(5)
            let lapsed = reason == nil && (expiresAt.map { $0 <= now } ?? false)
            let lifetimeMs: Int64? = try row.get(4)
            let lifetime = GrantLifetime.allCases.first { $0.milliseconds == lifetimeMs }?.rawValue ?? "custom"
            return Listing(grantID: Hex.encode(try vault.open(try row.get(0), .grantID).copyBytes()), peer: try vault.openEndpoint(try row.get(1)),
                           createdAt: try row.get(2), expiresAt: expiresAt, lifetime: lifetime,
                           state: reason ?? (lapsed ? "expired" : "active"), label: try row.get(6))
        }
    }
}
