import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// Stores written before the identity, session and send-state changes keep working after the upgrade.
@Suite(.timeLimit(.minutes(15))) struct StoredStateUpgradeTests {
    @Test func sentSendsBecomeTransmittedAndOutboxFramesGainASendLink() throws {
        let directory = TemporaryDirectory("mesh-upgrade")
        let db = try Database(path: directory.file("old.sqlite"))
        try Migrator([MeshSchema.migrations[0]]).migrate(db, now: 1)
        _ = try db.execute("""
            INSERT INTO mesh_sends (peer_index, status, form, fragments, content_bytes, created_at, updated_at)
            VALUES (x'01', 'sent', 'encrypted', 3, 10, 1, 1), (x'02', 'waiting', NULL, NULL, 5, 1, 1)
            """, [])
        _ = try db.execute("INSERT INTO mesh_outbox (frame, created_at) VALUES (x'aa', 1)", [])
        #expect(try Migrator(MeshSchema.migrations).migrate(db, now: 2).first == "meshmedia-002-send-states")
        let statuses = try db.query("SELECT status FROM mesh_sends ORDER BY id").map { try $0.get(0, as: String.self) }
        #expect(statuses == ["transmitted", "waiting"])
        #expect(try db.scalar("SELECT count(*) FROM mesh_outbox WHERE send_id IS NULL") == 1)
        #expect(throws: (any Error).self) {
            _ = try db.execute("INSERT INTO mesh_sends (peer_index, status, content_bytes, created_at, updated_at) VALUES (x'03', 'sent', 1, 1, 1)", [])
        }
    }

    @Test func aPeerRecordFromBeforeTheBindingRuleIsOneProvisionalClaim() throws {
        let noise = try X25519KeyPair.generate().publicKey
        let signing = try Ed25519PrivateKey.generate().publicKey
        var old: [UInt8] = [1] + NodeIdentity.peerID(noiseKey: noise) + noise + signing + [1]
        old.appendBigEndian(Capabilities.privateMedia.rawValue)
        old.appendBigEndian(UInt64(42))
        old += Array("bob".utf8)
        let record = try PeerRecord(serialized: old)
        #expect(record.standing == .provisional && record.signingKey == signing && record.boundSigningKey == nil)
        #expect(record.nickname == "bob" && record.capabilities == .privateMedia && record.claims[0].announcedAt == 42)
        #expect(try PeerRecord(serialized: record.serialized()) == record)
        #expect(throws: (any Error).self) { _ = try PeerRecord(serialized: record.serialized() + [0]) }
    }

    @Test func anEstablishedSessionFromBeforeThePendingHandshakeStaysEstablished() throws {
        var initiator = NoiseHandshake(role: .initiator, localStatic: try X25519KeyPair.generate())
        var responder = NoiseHandshake(role: .responder, localStatic: try X25519KeyPair.generate())
        _ = try responder.readMessage(try initiator.writeMessage())
        _ = try initiator.readMessage(try responder.writeMessage())
        _ = try responder.readMessage(try initiator.writeMessage())
        let transport = try initiator.transport()
        let state = transport.serialized()
        var old: [UInt8] = [1] + Array(repeating: 7, count: 8) + [2]
        old.appendBigEndian(UInt32(state.count))
        old += state + [0]
        let session = try PeerSession(serialized: old, startedAt: 99)
        #expect(session.established?.handshakeHash == transport.handshakeHash)
        #expect(session.pending == nil && session.startedAt == 99 && session.proof == nil)
        let roundTrip = try PeerSession(serialized: session.serialized(), startedAt: 0)
        #expect(roundTrip.established?.handshakeHash == transport.handshakeHash && roundTrip.startedAt == 99)
    }
}

/// `meshmedia-002` rebuilds `mesh_sends` (SQLite's twelve steps), now with foreign keys off (`Migrator`).
@Suite(.timeLimit(.minutes(15))) struct MeshRebuildTests {
    @Test func theSendStatesRebuildKeepsTheOutboxAndGivesTheSchemaOfANewStore() throws {
        let directory = TemporaryDirectory("mesh-rebuild")
        let upgraded = try Database(path: directory.file("old.sqlite"))
        try Migrator([MeshSchema.migrations[0]]).migrate(upgraded, now: 1)
        try upgraded.execute("""
            INSERT INTO mesh_sends (id, peer_index, status, content_bytes, created_at, updated_at) VALUES (1, x'01', 'sent', 10, 1, 1), (2, x'02', 'queued', 5, 1, 1);
            INSERT INTO mesh_outbox (id, frame, created_at) VALUES (1, x'aa', 1), (2, x'bb', 1);
            INSERT INTO mesh_carried (frame_id, neighbour, carried_at) VALUES (1, x'cc', 2), (2, x'cc', 2);
            """)
        try Migrator(MeshSchema.migrations).migrate(upgraded, now: 2)
        let fresh = try Database(path: directory.file("new.sqlite"))
        try Migrator(MeshSchema.migrations).migrate(fresh, now: 2)
        let snapshot = try StoreSnapshot(upgraded)
        #expect(snapshot.schema == (try StoreSnapshot(fresh)).schema)
        #expect(snapshot.rows["mesh_sends"]?.count == 2 && snapshot.rows["mesh_carried"]?.count == 2)
        #expect(try upgraded.query("PRAGMA foreign_key_check").isEmpty)
        #expect(try upgraded.scalar("PRAGMA foreign_keys") as Int? == 1)
    }
}
