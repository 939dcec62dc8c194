import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// Panic wipe leaves nothing of what it erased in the store's files (database, WAL, shared memory), even while
/// another process is reading the store, and clears the send history too.
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct PanicWipeTests {
    static let pair = MeshLab.bidirectional([("a", "b")])

    /// b with keys, a pinned session with a, the identity cache, a sent file and a consented send still queued.
    func usedNode() throws -> (MeshLab, sessionVersions: [[UInt8]]) {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        var versions: [[UInt8]] = []
        for content in [MeshLab.random(900), MeshLab.random(700)] {
            try lab.job("a", ["mesh", "send-file", "--to", lab.id("b"), lab.file("f\(lab.clock).bin", content)])
            try lab.pump(["a", "b"], links: Self.pair, rounds: 6)
            versions.append(try #require(try lab.database("b").scalar("SELECT sealed FROM mesh_sessions") as [UInt8]?))
        }
        try lab.job("b", ["mesh", "send-file", "--to", lab.id("a"), lab.file("back.bin", MeshLab.random(600))])
        try lab.pump(["a", "b"], links: Self.pair, rounds: 4)
        try lab.job("b", ["mesh", "send-file", "--to", lab.id("a"), lab.file("pending.bin", MeshLab.random(500)), "--accept-unencrypted"])
        #expect(versions[0] != versions[1])
        return (lab, versions)
    }

    /// Every key the wipe erases from b's store, as stored (sealed) and in the clear, by name.
    func wipedKeys(_ lab: MeshLab, sessionVersions: [[UInt8]]) throws -> [(String, [UInt8])] {
        let keyText = try String(contentsOfFile: lab.store("b") + ".key", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let keyring = try StoreKeyring(storeKey: SecretBytes(try Hex.decode(keyText)))
        let db = try lab.database("b")
        var keys: [(String, [UInt8])] = []
        let node = try #require(try db.queryOne("SELECT sealed_noise_private, sealed_signing_seed, noise_public, signing_public FROM mesh_node"))
        for (index, name) in ["sealed noise key", "sealed signing seed", "noise public key", "signing public key"].enumerated() {
            keys.append((name, try node.get(index, as: [UInt8].self)))
        }
        let identity = try #require(try NodeIdentity.load(database: db, keyring: keyring))
        keys.append(("noise private key", identity.noise.privateKey.copyBytes()))
        keys.append(("signing seed", identity.signing.seed.copyBytes()))
        let transport = try #require(try SessionStore(database: db, keyring: keyring).load(try Hex.decode(lab.id("a")))?.transport)
        keys.append(("session send key", transport.send.key!.copyBytes()))
        keys.append(("session receive key", transport.receive.key!.copyBytes()))
        for (index, version) in sessionVersions.enumerated() { keys.append(("sealed session v\(index)", version)) }
        for table in ["mesh_peers", "mesh_pins", "mesh_sends"] {
            for row in try db.query("SELECT sealed FROM \(table) WHERE sealed IS NOT NULL") {
                keys.append(("sealed \(table)", try row.get(0, as: [UInt8].self)))
            }
        }
        let peer = try #require(try PeerRegistry(database: db, keyring: keyring).record(for: try Hex.decode(lab.id("a"))))
        keys.append(("peer noise key", peer.noiseKey))
        keys.append(("peer signing key", try #require(peer.signingKey)))
        #expect(keys.filter { $0.0.hasPrefix("sealed mesh_") }.count >= 3)
        return keys
    }

    func traces(_ keys: [(String, [UInt8])], in path: String) -> [String] {
        keys.flatMap { key in StoreFiles.holding(key.1, in: path).map { "\(key.0) in \($0)" } }
    }

    @Test func panicWipeLeavesNoKeyInTheStoreFilesWhileAnotherProcessIsReadingAndClearsTheSendHistory() throws {
        let (lab, versions) = try usedNode()
        let keys = try wipedKeys(lab, sessionVersions: versions)
        #expect(!traces(keys, in: lab.store("b")).isEmpty)   // the probe finds what is there
        #expect((try lab.database("b").scalar("SELECT count(*) FROM mesh_sends") as Int?) == 2)

        // Another process (a status listing, a link served at that moment) holds a read open across the wipe.
        let reader = try Database(path: lab.store("b"))
        let watcher = try Database(path: lab.store("b"))
        try reader.execute("BEGIN")
        #expect((try reader.scalar("SELECT count(*) FROM mesh_sessions") as Int?) == 1)
        let wipe = try JobProcess.start(["--store", lab.store("b"), "--now", lab.nowArgument, "--json", "mesh", "panic-wipe"],
                                        environment: JobProcess.environment(home: lab.directory.path))
        // The reader finishes only after the wipe committed its deletes, while the wipe is still running.
        let deadline = Date().addingTimeInterval(30)
        while (try watcher.scalar("SELECT count(*) FROM mesh_node") as Int?) != 0, Date() < deadline { usleep(20_000) }
        usleep(300_000)
        try reader.execute("COMMIT")
        let result = try wipe.wait(timeout: 60)
        #expect(result.exitCode == 0, "\(result.stderr)")
        let cleared = try result.jsonObject()["cleared"] as? [String: Int] ?? [:]
        #expect(cleared["sends"] == 2 && cleared["pending_sends"] == 1 && cleared["pending_consents"] == 1)

        // Both other connections are still open, so nothing but the wipe itself has checkpointed the WAL.
        #expect(traces(keys, in: lab.store("b")) == [])
        let walSize = (try? FileManager.default.attributesOfItem(atPath: lab.store("b") + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0)
        #expect((try watcher.scalar("SELECT count(*) FROM mesh_sends") as Int?) == 0)
        _ = reader; _ = watcher
    }

    @Test func panicWipeBlockedByAReaderToTheEndSaysTracesRemainAndARerunFinishesTheJob() throws {
        let (lab, versions) = try usedNode()
        let keys = try wipedKeys(lab, sessionVersions: versions)
        let reader = try Database(path: lab.store("b"))
        try reader.execute("BEGIN")
        _ = try reader.scalar("SELECT count(*) FROM mesh_node") as Int?
        let blocked = try lab.job("b", ["mesh", "panic-wipe"], exit: 75)
        #expect(blocked.stderr.contains("old copies of the erased data remain"))
        #expect(blocked.stderr.contains("run job mesh panic-wipe again"))
        // It is honest: the rows are gone, but the file still holds copies while the reader keeps its snapshot.
        #expect(!traces(keys, in: lab.store("b")).isEmpty)
        let watcher = try Database(path: lab.store("b"))
        #expect((try watcher.scalar("SELECT count(*) FROM mesh_node") as Int?) == 0)

        try reader.execute("COMMIT")
        let rerun = try lab.job("b", ["mesh", "panic-wipe"], json: true).jsonObject()["cleared"] as? [String: Int] ?? [:]
        #expect(rerun["keys"] == 0 && rerun["sends"] == 0)
        #expect(traces(keys, in: lab.store("b")) == [])
        _ = reader; _ = watcher
    }

    @Test func panicWipeClearsTheMeshPassesHistoryToo() throws {
        let (lab, _) = try usedNode()
        let db = try lab.database("b")
        let history = "SELECT count(*) FROM job_runs WHERE job IN ('media-inbox', 'media-outbox', 'media-alias-check')"
        #expect((try db.scalar(history) as Int?) ?? 0 > 0)
        let cleared = try lab.job("b", ["mesh", "panic-wipe"], json: true).jsonObject()["cleared"] as? [String: Int]
        #expect(cleared?["pass_history"] ?? 0 > 0)
        #expect((try db.scalar(history) as Int?) == 0)
        let status = try lab.job("b", ["status"]).stdout
        #expect(!status.contains("delivered_encrypted") && !status.contains("pinned"))
    }
}
