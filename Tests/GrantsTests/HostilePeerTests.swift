import Cryptography
import Foundation
@testable import Grants
import QUIC
import Runner
import Testing
import TestSupport

/// A peer that breaks the framing or the order: the server closes with a logged category and changes nothing.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct HostilePeerTests {
    /// Alice serves; Bob holds a grant from Alice and has proven it on a fresh `/vnidrop/offer/1` connection.
    func provenConnection(to alice: LinkTestNode, as bob: LinkTestNode) throws -> LinkConnection {
        let connection = try LinkConnection.dial(try LinkAddress.parse(alice.address), expected: alice.endpoint, protocolName: .offer,
                                                 identity: try bob.identity(), connectTimeout: 5)
        let database = try bob.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: try bob.vault()).usable(contactID: contactID))
        #expect(try ProofExchange.prove(connection, grant: grant, identity: try bob.identity()) == .accepted)
        return connection
    }

    func storeSnapshot(_ node: LinkTestNode) throws -> String {
        let database = try node.database()
        // grants_issued is left out: each accepted proof renews its grant's idle deadline, as it should.
        return try ["incoming_offers", "notifications", "contacts", "held_offers", "grants_held", "blocked_endpoints"].map { table in
            try database.query("SELECT * FROM \(table) ORDER BY rowid").map { "\($0.values)" }.joined(separator: ";")
        }.joined(separator: "|")
    }

    func expectClosed(_ connection: LinkConnection) {
        #expect(throws: LinkFailure.self) { _ = try connection.receive() }
    }

    @Test func oversizeTruncatedMalformedAndOutOfOrderFramesCloseTheConnectionAndChangeNothing() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        try pair(issuer: alice, holder: bob, label: "alice")
        let before = try storeSnapshot(alice)

        // Each case gets a proven connection and then misbehaves.
        var connection = try provenConnection(to: alice, as: bob)
        try connection.sendBytes([0x00, 0x01, 0x00, 0x01])          // announces 65,537 bytes
        expectClosed(connection); connection.close()

        connection = try provenConnection(to: alice, as: bob)
        try connection.sendBytes([0x00, 0x00, 0x01, 0x00] + Array("{\"type\":\"offer\"".utf8))  // 256 announced, fewer sent
        connection.close()

        connection = try provenConnection(to: alice, as: bob)
        try connection.sendFrame(Array("not json at all".utf8))
        expectClosed(connection); connection.close()

        connection = try provenConnection(to: alice, as: bob)
        try connection.sendFrame(Array(#"{"type":"offer","offer_id":"zz","ticket":"t","file_count":1,"total_bytes":1}"#.utf8))
        expectClosed(connection); connection.close()

        connection = try provenConnection(to: alice, as: bob)
        try connection.sendFrame(Array(#"{"type":"offer","offer_id":"00112233445566778899aabbccddeeff","ticket":"t","file_count":true,"total_bytes":1}"#.utf8))
        expectClosed(connection); connection.close()

        connection = try provenConnection(to: alice, as: bob)
        try connection.send(["type": "ack", "offer_ids": []])          // out of order
        expectClosed(connection); connection.close()

        // A proof sent twice: the second is out of order.
        connection = try LinkConnection.dial(try LinkAddress.parse(alice.address), expected: alice.endpoint, protocolName: .offer,
                                             identity: try bob.identity(), connectTimeout: 5)
        _ = try connection.receive()
        try connection.send(["type": "offer"])
        expectClosed(connection); connection.close()

        let log = try alice.stopServer()
        for category in ["oversize", "truncated", "malformed", "out-of-order"] {
            #expect(log.contains("category=\(category)"), "logged: \(category)")
        }
        #expect(try storeSnapshot(alice) == before)
        let database = try alice.database()
        #expect(try database.scalar("SELECT count(*) FROM incoming_offers") == 0)
        #expect(try database.scalar("SELECT count(*) FROM notifications") == 0)
        #expect(notifications(alice).isEmpty)
    }

    @Test func aClientWithAnUnknownProtocolIsRefusedWithNoApplicationProtocol() throws {
        let alice = LinkTestNode()
        try alice.startServer()
        let stranger = try LinkIdentity.quic(NodeIdentity(privateKey: try Ed25519PrivateKey.generate()))
        let address = try #require(QUICAddress.resolve(host: "127.0.0.1", port: alice.port).first)
        // Our own QUIC stack as the client: the server's refusal arrives as TLS alert 120 (no_application_protocol).
        #expect(throws: QUICError.handshake(alert: 120)) {
            _ = try QUICEndpoint.dial(address, expected: alice.endpoint.bytes, alpn: "/other/1", identity: stranger,
                                      timeouts: QUICTimeouts(handshakeSeconds: 5, idleSeconds: 5), handshakeDeadline: QUICConnection.clock.deadline(in: 5),
                                      shouldStop: { false })
        }
        // The same client with a protocol the link speaks completes the handshake.
        let connection = try QUICEndpoint.dial(address, expected: alice.endpoint.bytes, alpn: "/vnidrop/offer/1", identity: stranger,
                                               timeouts: QUICTimeouts(handshakeSeconds: 5, idleSeconds: 5),
                                               handshakeDeadline: QUICConnection.clock.deadline(in: 5), shouldStop: { false })
        #expect(connection.remoteKey == alice.endpoint.bytes && connection.protocolName == "/vnidrop/offer/1")
        connection.abort()
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=handshake"), "\(log)")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 0)
    }

    @Test func aBlockedEndpointsLiveOfferNeverReachesThePrompt() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try alice.ok(["block", bob.endpointHex])
        let result = try bob.run(["--json", "offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-blocked"), "--files", "1", "--bytes", "1"])
        #expect(result.exitCode == 69)
        #expect(result.stderr.contains("(the pairing lapsed) — pair again"), "the blocked sender is told exactly what an expired pairing says")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 0)
        #expect(try alice.scalar("SELECT count(*) FROM notifications") == 0)
        #expect(try bob.scalar("SELECT count(*) FROM grants_held") == 0)
    }

    @Test func serveLinkServesTheUDPSocketOnStdinAsUnderSocketActivation() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        _ = try alice.identity()
        try alice.set(["link.idle-exit-seconds": "2"])
        // Like systemd with ListenDatagram= and Accept=no: the bound UDP socket is `job serve-link`'s stdin.
        let (socketFD, address) = try RawPeer.staller(on: "127.0.0.1")
        try bob.database().execute("UPDATE contacts SET last_known_addr = ?", [address])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: JobProcess.executablePath)
        process.arguments = ["--store", alice.store, "serve-link"]
        process.environment = alice.environment
        process.standardInput = FileHandle(fileDescriptor: socketFD, closeOnDealloc: true)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() }; process.waitUntilExit() }
        let pulled = try bob.json(["pull-offers", "--check-now"])
        #expect((pulled["counts"] as? [String: Int])?["contacts"] == 1)
        #expect((pulled["counts"] as? [String: Int])?["unreachable"] == 0)
        #expect((pulled["counts"] as? [String: Int])?["failed"] == 0)

        let notASocket = try alice.run(["serve-link"])
        #expect(notASocket.exitCode == 64 && notASocket.stderr.contains("no UDP socket was passed"))
    }
}
