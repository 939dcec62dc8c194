import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// Secrets at rest: the node's keys, Noise session keys, pins and queued file content never appear in the
/// store's files in the clear.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct AtRestTests {
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count, let first = needle.first else { return false }
        var index = haystack.startIndex
        while let found = haystack[index...].firstIndex(of: first) {
            if found + needle.count > haystack.count { return false }
            if haystack[found..<(found + needle.count)].elementsEqual(needle) { return true }
            index = found + 1
        }
        return false
    }

    @Test func keysSessionsPinsAndFileContentAreSealed() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: MultiNodeTests.pair)
        let content = MeshLab.random(4_096)
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("secret.bin", content)])
        // While queued, the content is in a's store only sealed.
        var files = try Self.storeBytes(lab.store("a"))
        #expect(!Self.contains(files, Array(content.prefix(64))))
        try lab.pump(["a", "b"], links: MultiNodeTests.pair, rounds: 6)
        #expect(lab.delivered("b").values.first == content)

        // The default key location: `<store>.key`, 64 hex digits.
        let keyText = try String(contentsOfFile: lab.store("a") + ".key", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let keyring = try StoreKeyring(storeKey: SecretBytes(try Hex.decode(keyText)))
        let database = try lab.database("a")
        let identity = try NodeIdentity.load(database: database, keyring: keyring)!
        let session = try SessionStore(database: database, keyring: keyring).load(try Hex.decode(lab.id("b")))!
        let transport = session.transport!
        files = try Self.storeBytes(lab.store("a"))
        #expect(!Self.contains(files, identity.noise.privateKey.copyBytes()))
        #expect(!Self.contains(files, identity.signing.seed.copyBytes()))
        #expect(!Self.contains(files, transport.send.key!.copyBytes()))
        #expect(!Self.contains(files, transport.receive.key!.copyBytes()))
        #expect(!Self.contains(files, Array(content.prefix(64))))
        let fingerprint = NodeIdentity.fingerprint(noiseKey: transport.remoteStatic)
        #expect(try PeerRegistry(database: database, keyring: keyring).isPinned(fingerprint: fingerprint))
        #expect(!Self.contains(files, fingerprint))
        // The sealed values do not open under another store key.
        let other = try StoreKeyring(storeKey: try SecretBytes.random(count: 32))
        #expect(throws: (any Error).self) { _ = try NodeIdentity.load(database: database, keyring: other) }
    }

    /// The database file and its WAL, as bytes.
    static func storeBytes(_ path: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        for suffix in ["", "-wal"] {
            if let data = FileManager.default.contents(atPath: path + suffix) { bytes += [UInt8](data) }
        }
        return bytes
    }
}
