import Cryptography
import Runner
import Store

/// The minting identities (docs/protocols/jwt-pool.md §4): stored, listed, switched; private keys sealed under the store key.
///
/// A `did:ethr` identity's 32-byte secp256k1 key is sealed with `StoreKeyring` (purpose
/// `token-pool-identity-key`) and opened only to mint (once per pass) or for an explicit `identity export`.
/// A `did:peer` (passkey) identity has no key here. Exactly one identity is active; switching it drops the
/// pool in the same transaction (docs/protocols/jwt-pool.md §5, `clearNativeFetcherPool`).
package struct IdentityStore {
    static let keyPurpose = "token-pool-identity-key"

    let database: Database

    package init(database: Database) { self.database = database }

    /// A stored identity.
    package struct Identity: Sendable, Equatable {
        package let id: Int64
        package let did: String
        package let method: IdentityDID.Method
        package let createdAt: Int64
        package let isActive: Bool
    }

    /// Stores a did:ethr identity for `key` (sealed), making it active when no identity is. Idempotent: importing
    /// a key already stored changes nothing. Returns the identity and whether it was new.
    package func importKey(_ key: Secp256k1PrivateKey, keyring: StoreKeyring, now: Int64) throws -> (identity: Identity, created: Bool) {
        let did = DIDEthr.did(for: key)
        return try database.write { db in
            if let existing = try identity(did: did) { return (existing, false) }
            let sealed = try key.rawRepresentation.withBytes { try keyring.seal(Array($0), purpose: Self.keyPurpose) }
            _ = try db.execute("INSERT INTO token_pool_identities (did, method, sealed_private_key, created_at) VALUES (?, 'ethr', ?, ?)",
                               [did, sealed, now])
            let id = db.lastInsertRowID
            try activateIfNone(id, now: now)
            return (try identity(did: did)!, true)
        }
    }

    /// Stores a did:peer identity (no key), making it active when no identity is. Idempotent.
    package func addPeer(did: String, now: Int64) throws -> (identity: Identity, created: Bool) {
        try database.write { db in
            if let existing = try identity(did: did) { return (existing, false) }
            _ = try db.execute("INSERT INTO token_pool_identities (did, method, sealed_private_key, created_at) VALUES (?, 'peer', NULL, ?)",
                               [did, now])
            try activateIfNone(db.lastInsertRowID, now: now)
            return (try identity(did: did)!, true)
        }
    }

    /// Every identity, oldest first.
    package func all() throws -> [Identity] {
        try database.query("""
            SELECT i.id, i.did, i.method, i.created_at, a.identity_id IS NOT NULL
            FROM token_pool_identities i LEFT JOIN token_pool_active_identity a ON a.identity_id = i.id
            ORDER BY i.id
            """).map(Self.identity(from:))
    }

    /// The identity with `did`, if stored. A did:ethr DID matches in any letter case (its address is hex; the
    /// checksum casing is only a spelling); a did:peer DID matches exactly (its multibase text is case-sensitive).
    package func identity(did: String) throws -> Identity? {
        let match = IdentityDID.isEthr(did) ? "lower(i.did) = lower(?)" : "i.did = ?"
        return try database.queryOne("""
            SELECT i.id, i.did, i.method, i.created_at, a.identity_id IS NOT NULL
            FROM token_pool_identities i LEFT JOIN token_pool_active_identity a ON a.identity_id = i.id
            WHERE \(match)
            """, [did]).map(Self.identity(from:))
    }

    /// The active identity, if any.
    package func active() throws -> Identity? {
        try database.queryOne("""
            SELECT i.id, i.did, i.method, i.created_at, 1
            FROM token_pool_active_identity a JOIN token_pool_identities i ON i.id = a.identity_id
            """).map(Self.identity(from:))
    }

    /// Makes `did` active. When that changes the active identity, the live pool is retired in the same
    /// transaction (its rows are purged afterwards in batches). Returns whether the active identity changed and
    /// how many slots the dropped pool had.
    package func use(did: String, now: Int64) throws -> (changed: Bool, droppedSlots: Int) {
        try database.write { db in
            guard let target = try identity(did: did) else { throw TokenPoolErrors.unknownIdentity }
            if target.isActive { return (false, 0) }
            _ = try db.execute("""
                INSERT INTO token_pool_active_identity (singleton, identity_id, changed_at) VALUES (1, ?, ?)
                ON CONFLICT (singleton) DO UPDATE SET identity_id = excluded.identity_id, changed_at = excluded.changed_at
                """, [target.id, now])
            let dropped = try PoolStore(database: db).retireLive()
            return (true, dropped)
        }
    }

    /// Signs out: no identity stays active and the live pool is retired in the same transaction (its rows are
    /// purged afterwards in batches). Returns whether an identity was active and how many slots were dropped.
    package func signOut() throws -> (wasActive: Bool, droppedSlots: Int) {
        try database.write { db in
            let removed = try db.execute("DELETE FROM token_pool_active_identity", [])
            let dropped = try PoolStore(database: db).retireLive()
            return (removed > 0, dropped)
        }
    }

    /// Starts removing `identity`: in one transaction it stops being active (if it was) and every pool generation
    /// minted for it is retired. Its sealed rows are then purged in batches (`PoolStore.purge`), and
    /// `deleteRemoved` deletes the identity with its sealed key. Returns the live slots dropped.
    package func retireForRemoval(_ identity: Identity) throws -> Int {
        try database.write { db in
            _ = try db.execute("DELETE FROM token_pool_active_identity WHERE identity_id = ?", [identity.id])
            let live = try PoolStore(database: db).live()
            _ = try db.execute("UPDATE token_pool_generations SET state = 'retired' WHERE identity_id = ?", [identity.id])
            return live?.identityID == identity.id ? live!.plan.size : 0
        }
    }

    /// Deletes `identity` and its sealed key, once no pool generation refers to it (after `retireForRemoval` and
    /// a purge). Returns false, changing nothing, if one still does (a purge was interrupted: run it again).
    package func deleteRemoved(_ identity: Identity) throws -> Bool {
        try database.write { db in
            let generations: Int = try db.scalar("SELECT count(*) FROM token_pool_generations WHERE identity_id = ?", [identity.id]) ?? 0
            guard generations == 0 else { return false }
            _ = try db.execute("DELETE FROM token_pool_active_identity WHERE identity_id = ?", [identity.id])
            return try db.execute("DELETE FROM token_pool_identities WHERE id = ?", [identity.id]) > 0
        }
    }

    /// Opens the sealed key of `identity` (a did:ethr identity) and checks it still derives the stored DID.
    package func openKey(of identity: Identity, keyring: StoreKeyring) throws -> Secp256k1PrivateKey {
        guard identity.method == .ethr else { throw TokenPoolErrors.unsupportedIdentity }
        guard let sealed: [UInt8] = try database.scalar("SELECT sealed_private_key FROM token_pool_identities WHERE id = ?", [identity.id]) else {
            throw TokenPoolErrors.identityKeyUnreadable
        }
        let key: Secp256k1PrivateKey
        do { key = try Secp256k1PrivateKey(rawRepresentation: try keyring.open(sealed, purpose: Self.keyPurpose)) }
        catch { throw TokenPoolErrors.identityKeyUnreadable }
        guard DIDEthr.did(for: key) == identity.did else { throw TokenPoolErrors.identityKeyUnreadable }
        return key
    }

    private func activateIfNone(_ id: Int64, now: Int64) throws {
        _ = try database.execute("INSERT INTO token_pool_active_identity (singleton, identity_id, changed_at) VALUES (1, ?, ?) ON CONFLICT (singleton) DO NOTHING",
                                 [id, now])
    }

    private static func identity(from row: Row) throws -> Identity {
        // The table's CHECK constraint admits only the two methods.
        guard let method = IdentityDID.Method(rawValue: try row.get(2, as: String.self)) else { throw JobError.internal("unknown identity method in the store") }
        return Identity(id: try row.get(0, as: Int64.self), did: try row.get(1, as: String.self),
                        method: method, createdAt: try row.get(3, as: Int64.self),
                        isActive: try row.get(4, as: Bool.self))
    }
}
