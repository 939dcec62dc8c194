import Cryptography
import Runner
import Store

/// Which client the node behaves as. `current` is the node; the other two emulate migration-era senders so the
/// multi-node tests can exercise every inbound row of docs/protocols/mesh-wire.md ("Receiving"): `prerelease-ios` emits the 0x09 alias for
/// encrypted files, `older-client` advertises no `privateMedia` and only sends signed legacy `fileTransfer`.
package enum ClientEmulation: String, Sendable, CaseIterable {
    case current
    case prereleaseIOS = "prerelease-ios"
    case olderClient = "older-client"

    /// Capabilities in announces and in the authenticated peer state.
    var capabilities: Capabilities? {
        switch self {
        case .current, .prereleaseIOS: return Capabilities.advertised
        case .olderClient: return nil
        }
    }
}

/// The node's own keys: a Noise static key (X25519) and a signing key (Ed25519), sealed in `mesh_node`.
///
/// Peer id = first 8 bytes of SHA-256 of the Noise static public key; fingerprint = all 32 bytes.
struct NodeIdentity {
    let peerID: [UInt8]
    let noise: X25519KeyPair
    let signing: Ed25519PrivateKey
    let nickname: String
    let emulation: ClientEmulation

    static let noisePurpose = "mesh-noise-static"
    static let signingPurpose = "mesh-signing-seed"

    static func peerID(noiseKey: [UInt8]) -> [UInt8] { Array(SHA256.hash(noiseKey).prefix(8)) }
    static func fingerprint(noiseKey: [UInt8]) -> [UInt8] { SHA256.hash(noiseKey) }

    /// Creates and stores fresh keys; refuses when the node already has them.
    static func create(database: Database, keyring: StoreKeyring, nickname: String, emulation: ClientEmulation, now: Int64) throws -> NodeIdentity {
        let noise = try X25519KeyPair.generate()
        let signing = try Ed25519PrivateKey.generate()
        let peerID = peerID(noiseKey: noise.publicKey)
        let sealedNoise = try keyring.seal(noise.privateKey.copyBytes(), purpose: noisePurpose)
        let sealedSeed = try keyring.seal(signing.seed.copyBytes(), purpose: signingPurpose)
        try database.write { db in
            guard try db.queryOne("SELECT 1 FROM mesh_node") == nil else {
                throw JobError.badInput("node-exists", "this store already has a mesh node; use job mesh panic-wipe first to replace its keys")
            }
            _ = try db.execute("""
                INSERT INTO mesh_node (id, peer_id, noise_public, signing_public, sealed_noise_private, sealed_signing_seed, nickname, emulate, created_at)
                VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [peerID, noise.publicKey, signing.publicKey, sealedNoise, sealedSeed, nickname, emulation.rawValue, now])
        }
        return NodeIdentity(peerID: peerID, noise: noise, signing: signing, nickname: nickname, emulation: emulation)
    }

    /// Loads the node's keys, or nil when `mesh init` has not run (or a panic wipe cleared them).
    static func load(database: Database, keyring: StoreKeyring) throws -> NodeIdentity? {
        guard let row = try database.queryOne("SELECT sealed_noise_private, sealed_signing_seed, nickname, emulate, noise_public FROM mesh_node WHERE id = 1") else {
            return nil
        }
        let noise = try X25519KeyPair(privateKey: try keyring.open(try row.get(0, as: [UInt8].self), purpose: noisePurpose))
        let signing = try Ed25519PrivateKey(seed: try keyring.open(try row.get(1, as: [UInt8].self), purpose: signingPurpose))
        guard noise.publicKey == (try row.get(4, as: [UInt8].self)) else {
            throw JobError.configuration("node-key-mismatch", "the node's sealed Noise key does not match its public key; the store was altered")
        }
        let emulation = ClientEmulation(rawValue: try row.get(3, as: String.self)) ?? .current
        return NodeIdentity(peerID: peerID(noiseKey: noise.publicKey), noise: noise, signing: signing,
                            nickname: try row.get(2, as: String.self), emulation: emulation)
    }

    /// The node's keys, or a configuration error telling the operator to run `mesh init`.
    static func require(database: Database, keyring: StoreKeyring) throws -> NodeIdentity {
        guard let identity = try load(database: database, keyring: keyring) else {
            throw JobError.configuration("no-node", "this store has no mesh node; run job mesh init first")
        }
        return identity
    }
}
