import Cryptography
import Runner

/// The store's one endpoint key (Ed25519): created on first use, its private half sealed at rest.
package struct NodeIdentity: Sendable {
    package let privateKey: Ed25519PrivateKey
    package var endpoint: EndpointID { try! EndpointID(bytes: privateKey.publicKey) }

    package init(privateKey: Ed25519PrivateKey) { self.privateKey = privateKey }

    /// Loads the node key, creating it on first use. Two processes racing on first use end with the same key:
    /// the insert is `OR IGNORE` and both read back the row that won.
    package static func loadOrCreate(_ database: Database, vault: Vault, now: Int64) throws -> NodeIdentity {
        if let existing = try load(database, vault: vault) { return existing }
        let fresh: Ed25519PrivateKey
        do { fresh = try Ed25519PrivateKey.generate() } catch { throw JobError.internal("cannot generate the endpoint key") }
        let sealed = try vault.seal(fresh.seed.copyBytes(), .endpointKey)
        try database.writeIfNeeded { db in
            try db.execute("INSERT OR IGNORE INTO node_identity (id, key_sealed, public_key, created_at) VALUES (1, ?, ?, ?)",
                           [sealed, fresh.publicKey, now])
        }
        guard let stored = try load(database, vault: vault) else { throw JobError.internal("the endpoint key was not stored") }
        return stored
    }

    /// The node key, if one exists.
    package static func load(_ database: Database, vault: Vault) throws -> NodeIdentity? {
        guard let row = try database.queryOne("SELECT key_sealed, public_key FROM node_identity WHERE id = 1") else { return nil }
        let seed = try vault.open(try row.get(0, as: [UInt8].self), .endpointKey)
        let key: Ed25519PrivateKey
        do { key = try Ed25519PrivateKey(seed: seed) } catch { throw JobError.internal("the stored endpoint key is malformed") }
        guard key.publicKey == (try row.get(1, as: [UInt8].self)) else {
            throw JobError.internal("the stored endpoint key does not match its public key")
        }
        return NodeIdentity(privateKey: key)
    }
}
