import Cryptography
import Foundation
import Store
@testable import MeshMedia

/// A hostile peer in a `MeshLab`: frames crafted with the module's own encoders and keys, put on the air through
/// the attacker node's outbox so the real `job mesh exchange` carries them to the victim's neighbour.
extension MeshLab {
    /// A node's own `MeshNode` over its real store file, at the lab's clock (the node acting outside `job`).
    func meshNode(_ node: String) throws -> MeshNode {
        let keyText = try String(contentsOfFile: store(node) + ".key", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let keyring = try StoreKeyring(storeKey: SecretBytes(try Hex.decode(keyText)))
        let database = try self.database(node)
        let identity = try NodeIdentity.load(database: database, keyring: keyring)!
        return MeshNode(database: database, keyring: keyring, identity: identity, now: clock)
    }

    /// A node's Noise static public key, as everyone hears it in its announces.
    func noiseKey(_ node: String) throws -> [UInt8] {
        try database(node).scalar("SELECT noise_public FROM mesh_node WHERE id = 1")!
    }

    func signingKey(_ node: String) throws -> [UInt8] {
        try database(node).scalar("SELECT signing_public FROM mesh_node WHERE id = 1")!
    }

    /// Puts `packets` on the air from `attacker`'s radio (its outbox), whatever sender they name.
    func broadcast(from attacker: String, _ packets: [BitchatPacket]) throws {
        let db = try database(attacker)
        for packet in packets {
            for frame in try FragmentPlanner.frames(for: packet, fragmentID: MeshLab.random(8)) {
                _ = try db.execute("INSERT INTO mesh_outbox (frame, created_at) VALUES (?, ?)", [try frame.encoded(), clock])
            }
        }
    }

    /// An announce of `victim`'s Noise key signed with `key`, sent under the victim's peer id.
    func forgedAnnounce(of victim: String, signedWith key: Ed25519PrivateKey, capabilities: Capabilities? = .privateMedia,
                        at timestamp: Int64) throws -> BitchatPacket {
        let announce = Announce(nickname: victim, noisePublicKey: try noiseKey(victim), signingPublicKey: key.publicKey, capabilities: capabilities)
        var packet = BitchatPacket(type: .announce, ttl: 7, timestamp: UInt64(timestamp), senderID: try Hex.decode(id(victim)),
                                   payload: try announce.encoded())
        packet.signature = try key.sign(try packet.signingPreimage())
        return packet
    }

    /// A signed, directed legacy `fileTransfer` from `sender`'s id to `recipient`, signed with `key`.
    func legacyFile(from sender: String, to recipient: String, content: [UInt8], signedWith key: Ed25519PrivateKey,
                    at timestamp: Int64) throws -> BitchatPacket {
        let file = try FilePacket(fileName: "f.txt", mimeType: "text/plain", content: content).encoded()
        var packet = BitchatPacket(type: .fileTransfer, ttl: 7, timestamp: UInt64(timestamp), senderID: try Hex.decode(id(sender)),
                                   recipientID: try Hex.decode(id(recipient)), payload: file)
        packet.signature = try key.sign(try packet.signingPreimage())
        return packet
    }

    /// Carries `from`'s outbox to `to` and runs `to`'s inbox pass.
    func deliver(_ from: String, to: String) throws -> [String: Int] {
        try exchange(from, to)
        return try pass(to, "media-inbox")
    }
}
