import Cryptography
import Foundation
@testable import Grants
import Testing
import TestSupport

/// The link against real iroh endpoints (PyPI `iroh` 1.2.0, the Rust library's own bindings), each test in a
/// loopback-only network namespace of its own with every `job` process it talks to.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct IrohInteropTests {
    /// A fresh iroh secret key (hex) and its endpoint id (hex).
    func irohKey() throws -> (secret: String, id: String) {
        let seed = try SecureRandom.bytes(count: 32)
        return (Hex.encode(seed), Hex.encode(try Ed25519PrivateKey(seed: SecretBytes(seed)).publicKey))
    }

    func randomHex(_ count: Int) throws -> String { Hex.encode(try SecureRandom.bytes(count: count)) }

    /// A grant the iroh peer `issuer` issued to `holder`, as the bundle line `grants accept` reads.
    func bundle(issuer: String, holder: String, grantID: String, secret: String) -> String {
        "vnidrop-grant-v1.\(issuer).\(holder).\(grantID).\(secret).never"
    }

    @Test func aRealIrohEndpointHoldingAGrantDeliversAnOfferThatOffersListShows() throws {
        let namespace = try IrohNamespace()
        let alice = LinkTestNode(namespace: namespace)
        // Every connection first answers a QUIC Retry (address validation): iroh follows it.
        try alice.set(["link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let iroh = try irohKey()
        let line = try alice.ok(["grants", "issue", "--to", iroh.id]).trimmingCharacters(in: .whitespacesAndNewlines)

        let offerID = try randomHex(16)
        let delivered = try IrohPeer(in: namespace, ["offer-client", iroh.secret, alice.endpointHex, "\(alice.port)", line, offerID]).finish()
        #expect(delivered["answer"] as? String == "accepted" && delivered["result"] as? String == "pending", "\(delivered)")
        #expect(delivered["remote"] as? String == alice.endpointHex, "iroh saw our endpoint key")
        let listed = try alice.ok(["offers", "list"])
        #expect(listed.contains(offerID) && listed.contains("pending"), "\(listed)")

        // The same grant proven with a wrong secret is refused, and nothing is stored.
        var fields = line.split(separator: ".").map(String.init)
        fields[4] = try randomHex(32)
        let forgedID = try randomHex(16)
        let forged = try IrohPeer(in: namespace, ["offer-client", iroh.secret, alice.endpointHex, "\(alice.port)", fields.joined(separator: "."), forgedID]).finish()
        #expect(forged["answer"] as? String == "lapsed" && forged["result"] == nil, "\(forged)")
        #expect(try !alice.ok(["offers", "list"]).contains(forgedID))
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 1)
    }

    @Test func pullOffersCollectsAnOfferHeldByARealIrohEndpointExactlyOnce() throws {
        let namespace = try IrohNamespace()
        let bob = LinkTestNode(namespace: namespace)
        let iroh = try irohKey()
        let grantID = try randomHex(16), grantSecret = try randomHex(32), offerID = try randomHex(16)
        let offer = #"{"offer_id":"\#(offerID)","ticket":"ticket-held-by-iroh","sender_name":"py","file_count":3,"total_bytes":99}"#
        let peer = try IrohPeer(in: namespace, ["serve", iroh.secret, "pull", grantID, grantSecret, offer])
        let port = try #require(try peer.await("ready")["port"] as? Int)
        try bob.ok(["grants", "accept", "--label", "iroh", "--addr", "127.0.0.1:\(port)"],
                   stdin: bundle(issuer: iroh.id, holder: bob.endpointHex, grantID: grantID, secret: grantSecret))
        try bob.ok(["grants", "issue", "--to", iroh.id])   // Bob takes offers only from holders of his grants

        let pass = try bob.json(["pull-offers", "--check-now"])
        #expect((pass["counts"] as? [String: Int])?["collected"] == 1, "\(pass)")
        let served = try peer.finish()
        #expect(served["alpn"] as? String == "/vnidrop/pull/1" && served["proof"] as? String == "accepted", "\(served)")
        #expect(served["remote"] as? String == bob.endpointHex, "iroh authenticated Bob's key")
        #expect((served["ack"] as? [String: Any])?["offer_ids"] as? [String] == [offerID], "taken once, in the ack: \(served)")
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 1)
        #expect(try bob.ok(["offers", "list"]).contains(offerID))
    }

    @Test func offersSendDeliversToARealIrohEndpoint() throws {
        let namespace = try IrohNamespace()
        let bob = LinkTestNode(namespace: namespace)
        let iroh = try irohKey()
        let grantID = try randomHex(16), grantSecret = try randomHex(32)
        let peer = try IrohPeer(in: namespace, ["serve", iroh.secret, "offer", grantID, grantSecret])
        let port = try #require(try peer.await("ready")["port"] as? Int)
        try bob.ok(["grants", "accept", "--label", "iroh", "--addr", "127.0.0.1:\(port)"],
                   stdin: bundle(issuer: iroh.id, holder: bob.endpointHex, grantID: grantID, secret: grantSecret))
        let sent = try bob.json(["offers", "send", "--to", "iroh", "--ticket-file", ticketFile(bob, "ticket-for-iroh"), "--files", "2", "--bytes", "7"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        let served = try peer.finish()
        let offer = try #require(served["offer"] as? [String: Any], "\(served)")
        #expect(served["alpn"] as? String == "/vnidrop/offer/1" && served["proof"] as? String == "accepted")
        #expect(offer["offer_id"] as? String == sent["offer_id"] as? String && offer["ticket"] as? String == "ticket-for-iroh")
        #expect(offer["file_count"] as? Int == 2 && offer["total_bytes"] as? Int == 7)
    }

    @Test func dialingTheWrongEndpointIdIsRefusedByBothStacksEachWay() throws {
        let namespace = try IrohNamespace()
        let alice = LinkTestNode(namespace: namespace), bob = LinkTestNode(namespace: namespace)
        try alice.startServer()
        defer { _ = try? alice.stopServer() }

        // iroh dials Bob's id where Alice listens: iroh refuses Alice's key (TLS alert 48, unknown_ca).
        let iroh = try irohKey()
        let refused = try IrohPeer(in: namespace, ["dial", iroh.secret, bob.endpointHex, "\(alice.port)", "/vnidrop/offer/1"]).finish()
        #expect(refused["connected"] as? Bool == false && (refused["error"] as? String)?.contains("error 48") == true, "\(refused)")
        // The control: the right id at the same address connects.
        let right = try IrohPeer(in: namespace, ["dial", iroh.secret, alice.endpointHex, "\(alice.port)", "/vnidrop/offer/1"]).finish()
        #expect(right["connected"] as? Bool == true, "\(right)")

        // Bob dials the iroh endpoint X at an address where another iroh endpoint Y listens: our stack refuses Y.
        let x = try irohKey(), y = try irohKey()
        let grantID = try randomHex(16), grantSecret = try randomHex(32)
        let impostor = try IrohPeer(in: namespace, ["serve", y.secret, "offer", grantID, grantSecret])
        let port = try #require(try impostor.await("ready")["port"] as? Int)
        try bob.ok(["grants", "accept", "--label", "x", "--addr", "127.0.0.1:\(port)"],
                   stdin: bundle(issuer: x.id, holder: bob.endpointHex, grantID: grantID, secret: grantSecret))
        let sent = try bob.json(["offers", "send", "--to", "x", "--ticket-file", ticketFile(bob, "ticket-for-x"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "held", "\(sent)")
        #expect((sent["message"] as? String)?.hasPrefix("another device now answers") == true, "\(sent)")
        let event = try impostor.await("event", timeout: 10)
        #expect(event["event"] as? String == "refused", "iroh's side saw the handshake fail: \(event)")
        #expect(impostor.lines.first(where: { $0["offer"] != nil }) == nil, "nothing reached the impostor")
    }

    @Test func anIrohClientWithAProtocolWeDoNotServeGetsNoApplicationProtocol() throws {
        let namespace = try IrohNamespace()
        let alice = LinkTestNode(namespace: namespace)
        try alice.startServer()
        let iroh = try irohKey()
        let result = try IrohPeer(in: namespace, ["dial", iroh.secret, alice.endpointHex, "\(alice.port)", "/vnidrop/nope/1"]).finish()
        #expect(result["connected"] as? Bool == false, "\(result)")
        // rustls reports the TLS alert it received: 120 is no_application_protocol.
        #expect((result["error"] as? String)?.contains("error 120") == true, "\(result)")
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=handshake"), "\(log)")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 0)
    }

    @Test func anIrohDiallerGetsOneBidirectionalStreamPerConnectionAndNoOther() throws {
        let namespace = try IrohNamespace()
        let alice = LinkTestNode(namespace: namespace)
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let iroh = try irohKey()
        let result = try IrohPeer(in: namespace, ["streams", iroh.secret, alice.endpointHex, "\(alice.port)"]).finish()
        #expect(result["challenge"] as? Bool == true, "the first stream carries the exchange: \(result)")
        #expect(result["second_bidi"] as? String == "blocked" && result["uni"] as? String == "blocked",
                "the server grants no credit for a second stream of either kind: \(result)")
    }

    @Test func aRevokeNoticeReachesARealIrohHolder() throws {
        let namespace = try IrohNamespace()
        let bob = LinkTestNode(namespace: namespace)
        let iroh = try irohKey()
        let grantID = try randomHex(16), grantSecret = try randomHex(32)
        let peer = try IrohPeer(in: namespace, ["serve", iroh.secret, "revoke", grantID, grantSecret])
        let port = try #require(try peer.await("ready")["port"] as? Int)
        // The iroh endpoint is Bob's contact (Bob holds its grant) and holds a grant Bob issued.
        try bob.ok(["grants", "accept", "--label", "iroh", "--addr", "127.0.0.1:\(port)"],
                   stdin: bundle(issuer: iroh.id, holder: bob.endpointHex, grantID: grantID, secret: grantSecret))
        let issued = try bob.ok(["grants", "issue", "--to", iroh.id]).trimmingCharacters(in: .whitespacesAndNewlines)
        let issuedID = String(issued.split(separator: ".")[3])

        let revoked = try bob.json(["grants", "revoke", "--peer", iroh.id])
        #expect(revoked["revoked"] as? Int == 1 && revoked["peer_notified"] as? Bool == true, "\(revoked)")
        let served = try peer.finish()
        #expect(served["alpn"] as? String == "/vnidrop/revoke/1" && served["remote"] as? String == bob.endpointHex, "\(served)")
        #expect((served["revoke"] as? [String: Any])?["grant_ids"] as? [String] == [issuedID], "\(served)")
    }
}

/// The link over IPv6, inside a loopback-only namespace (so `::1` is the namespace's own loopback).
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct LinkIPv6Tests {
    @Test func serveLinkListensOnIPv6AndAContactAtABracketedAddressIsReached() throws {
        let namespace = try IrohNamespace()
        let alice = LinkTestNode(namespace: namespace), bob = LinkTestNode(namespace: namespace)
        _ = alice.endpointHex
        let server = try alice.startJob(["--store", alice.store, "serve-link", "--listen", "[::1]:0", "--idle-exit", "60"])
        defer { server.signal(SIGTERM); _ = try? server.wait(timeout: 20) }
        var port: String?
        let deadline = Date().addingTimeInterval(20)
        while port == nil && Date() < deadline {
            let text = server.stdoutSoFar
            port = text.range(of: "listening on [::1]:").flatMap { text[$0.upperBound...].split(separator: "\n").first.map(String.init) }
            if port == nil { usleep(20_000) }
        }
        let address = "[::1]:\(try #require(port, "serve-link printed no IPv6 address: \(server.stderrSoFar)"))"
        try pair(issuer: alice, holder: bob, label: "alice", address: address)
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-over-ipv6"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 1)
    }
}
