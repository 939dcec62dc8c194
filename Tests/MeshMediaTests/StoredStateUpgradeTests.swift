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
