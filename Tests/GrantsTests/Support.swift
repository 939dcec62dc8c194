import Cryptography
import Foundation
@testable import Grants
import Runner
import TestSupport

/// A node over a real migrated store in a temporary folder, for store-level tests.
final class TestNode {
    let inProcess: InProcessJob
    let database: Database
    let vault: Vault
    let node: Node

    init(now: Int64 = TestNode.day0) throws {
        inProcess = InProcessJob(modules: [RunnerModule.module, GrantsModule.module])
        database = try inProcess.database()
        vault = Vault(keyring: try StoreKeyring(storeKey: try SecretBytes.random(count: 32)))
        node = try Node(database: database, vault: vault, now: now)
    }

    var endpoint: EndpointID { node.identity.endpoint }

    /// 2026-01-01T00:00:00Z in ms.
    static let day0: Int64 = 1_767_225_600_000
    static let dayMs: Int64 = 86_400_000
}

/// A random endpoint id (a third party, a stranger).
func randomEndpoint() throws -> EndpointID {
    try EndpointID(bytes: try Ed25519PrivateKey.generate().publicKey)
}

func hex(_ text: String) -> [UInt8] { try! Hex.decode(text) }
