import Cryptography
import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// Grants across two real nodes: revocation, the block list, consent, replay, a third endpoint, reopen, stale addresses.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct TwoNodeGrantTests {
    /// Dials `issuer`'s server as `holder` (in-process, with the holder's real key) and returns the raw answer frame.
    func rawAnswer(from issuer: LinkTestNode, as identity: NodeIdentity, grantID: [UInt8], secret: SecretBytes,
                   proveAs holder: EndpointID? = nil, reuse: (challenge: [UInt8], proof: [UInt8])? = nil) throws -> (frame: [UInt8], challenge: [UInt8], proof: [UInt8]) {
        let connection = try LinkConnection.dial(try LinkAddress.parse(issuer.address), expected: issuer.endpoint, protocolName: .pull,
                                                 identity: identity, connectTimeout: 5)
        defer { connection.close() }
        let challenge = try connection.receive().hex("challenge", count: 32)
        let proof = reuse?.proof ?? GrantProof.prove(secret: secret, challenge: challenge, issuer: issuer.endpoint, holder: holder ?? identity.endpoint)
        try connection.send(LinkWire.proof(grantID: grantID, proof: proof))
        return (try connection.receiveFrame(), challenge, proof)
    }

    func heldGrant(_ node: LinkTestNode) throws -> HeldGrant {
        let database = try node.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT contact_id FROM grants_held ORDER BY id DESC LIMIT 1"))
        return try #require(try HeldGrants(database: database, vault: try node.vault()).usable(contactID: contactID))
    }

    @Test func aRevokedGrantIsAnsweredRevokedAndTheHolderDropsItsEntry() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        // Bob runs no server: the revoke notice cannot arrive, and correctness does not depend on it.
        let revoked = try alice.json(["grants", "revoke", "--peer", bob.endpointHex])
        #expect(revoked["revoked"] as? Int == 1 && revoked["peer_notified"] as? Bool == false)
        let grant = try heldGrant(bob)
        let answer = try rawAnswer(from: alice, as: try bob.identity(), grantID: grant.grantID, secret: grant.secret)
        #expect(String(decoding: answer.frame, as: UTF8.self) == #"{"type":"answer","answer":"revoked"}"#)

        let pass = try bob.json(["pull-offers", "--check-now"])
        #expect((pass["counts"] as? [String: Int])?["revoked"] == 1)
        #expect(try bob.scalar("SELECT count(*) FROM grants_held") == 0, "the dead entry is removed")
        let contacts = try #require(try JSONSerialization.jsonObject(with: Data(try bob.ok(["--json", "contacts", "list"]).utf8)) as? [[String: Any]])
        #expect(contacts.first?["status"] as? String == "revoked")
        #expect(try bob.ok(["contacts", "list"]).contains("no longer reachable — pair again (the other device removed this one)"))
        let send = try bob.run(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "t"), "--files", "1", "--bytes", "1"])
        #expect(send.exitCode == 69 && send.stderr.contains("no longer reachable (the other device removed this one) — pair again"))
    }

    @Test func aStrangerPresentingARevokedGrantsIDGetsLapsedAndOnlyTheHolderHearsRevoked() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), mallory = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        _ = try alice.json(["grants", "revoke", "--peer", bob.endpointHex])
        // Mallory learnt Bob's grant id and secret; she proves over her own authenticated key.
        let grant = try heldGrant(bob)
        let stranger = try rawAnswer(from: alice, as: try mallory.identity(), grantID: grant.grantID, secret: grant.secret)
        #expect(String(decoding: stranger.frame, as: UTF8.self) == #"{"type":"answer","answer":"lapsed"}"#)
        // Even proving as Bob (a MAC over Bob's endpoint) from Mallory's key: still only `lapsed`.
        let spoofed = try rawAnswer(from: alice, as: try mallory.identity(), grantID: grant.grantID, secret: grant.secret, proveAs: bob.endpoint)
        #expect(String(decoding: spoofed.frame, as: UTF8.self) == #"{"type":"answer","answer":"lapsed"}"#)
        let unknown = try rawAnswer(from: alice, as: try mallory.identity(), grantID: try SecureRandom.bytes(count: 16), secret: grant.secret)
        #expect(stranger.frame == unknown.frame, "byte-identical to an unknown grant id")
        let holder = try rawAnswer(from: alice, as: try bob.identity(), grantID: grant.grantID, secret: grant.secret)
        #expect(String(decoding: holder.frame, as: UTF8.self) == #"{"type":"answer","answer":"revoked"}"#)
    }

    @Test func aRevokeNoticeReachesAReachablePeerAndTheSweepDropsTheEntry() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try pair(issuer: bob, holder: alice, label: "bob")
        let revoked = try alice.json(["grants", "revoke", "--peer", bob.endpointHex])
        #expect(revoked["peer_notified"] as? Bool == true)
        #expect(try bob.scalar("SELECT count(*) FROM grants_held WHERE peer_revoked_at IS NOT NULL") == 1)
        let sweep = try bob.json(["sweep-grants"])
        #expect((sweep["counts"] as? [String: Int])?["dropped_held"] == 1)
        #expect(try bob.scalar("SELECT count(*) FROM grants_held") == 0)
        // Alice's own grant from Bob is untouched: the two directions are independent.
        #expect(try alice.scalar("SELECT count(*) FROM grants_held") == 1)
    }

    @Test func aBlockIsByteIdenticalToAnExpiredAndAnUnknownGrantAndDistinctFromRevoked() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), carol = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")
        let shortBundle = try alice.ok(["grants", "issue", "--to", carol.endpointHex, "--lifetime", "30d"])
        try carol.ok(["grants", "accept", "--label", "alice", "--addr", "127.0.0.1:1"], stdin: shortBundle)
        try alice.ok(["block", bob.endpointHex])
        // Alice's server runs 31 days ahead, so Carol's 30-day grant is idle-expired there.
        try alice.startServer(now: "@\(Int(Date().timeIntervalSince1970) + 31 * 86_400)")
        defer { _ = try? alice.stopServer() }

        let bobGrant = try heldGrant(bob)
        let blocked = try rawAnswer(from: alice, as: try bob.identity(), grantID: bobGrant.grantID, secret: bobGrant.secret)
        let carolGrant = try heldGrant(carol)
        let expired = try rawAnswer(from: alice, as: try carol.identity(), grantID: carolGrant.grantID, secret: carolGrant.secret)
        let unknown = try rawAnswer(from: alice, as: try carol.identity(), grantID: try SecureRandom.bytes(count: 16), secret: carolGrant.secret)
        #expect(blocked.frame == expired.frame)
        #expect(blocked.frame == unknown.frame)
        #expect(String(decoding: blocked.frame, as: UTF8.self) == #"{"type":"answer","answer":"lapsed"}"#)

        try alice.ok(["unblock", bob.endpointHex])
        try alice.ok(["grants", "revoke", "--peer", bob.endpointHex])
        let revoked = try rawAnswer(from: alice, as: try bob.identity(), grantID: bobGrant.grantID, secret: bobGrant.secret)
        #expect(revoked.frame != blocked.frame, "revoked is distinguishable from blocked")
        let log = try alice.stopServer()
        #expect(log.contains("reason=blocked") && log.contains("reason=expired") && log.contains("reason=unknown") && log.contains("reason=revoked"))
    }

    @Test func decliningToBeRememberedLeavesThePeerUnableToOffer() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        // Alice remembers Bob (she holds Bob's grant); Bob declines to remember Alice: he issues nothing.
        try pair(issuer: alice, holder: bob, label: "alice")
        // Bob holds a grant from Alice but Alice holds none from Bob: Alice cannot reach Bob.
        let noContact = try alice.run(["offers", "send", "--to", bob.endpointHex, "--ticket-file", ticketFile(alice, "t"), "--files", "1", "--bytes", "1"])
        #expect(noContact.exitCode == 65)
        // Even a modified client that makes up a grant is answered exactly like any unknown grant.
        let forged = try LinkConnection.dial(try LinkAddress.parse(bob.address), expected: bob.endpoint, protocolName: .offer,
                                             identity: try alice.identity(), connectTimeout: 5)
        defer { forged.close() }
        let challenge = try forged.receive().hex("challenge", count: 32)
        let secret = try SecretBytes.random(count: 32)
        try forged.send(LinkWire.proof(grantID: try SecureRandom.bytes(count: 16),
                                       proof: GrantProof.prove(secret: secret, challenge: challenge, issuer: bob.endpoint, holder: alice.endpoint)))
        #expect(String(decoding: try forged.receiveFrame(), as: UTF8.self) == #"{"type":"answer","answer":"lapsed"}"#)
        #expect(throws: LinkFailure.self) { try forged.send(["type": "offer"]); _ = try forged.receive() }
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 0)
        #expect(try bob.scalar("SELECT count(*) FROM notifications") == 0)
    }

    @Test func aReplayedProofAndAProofFromAThirdEndpointAreRefused() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), carol = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        let grant = try heldGrant(bob)
        let first = try rawAnswer(from: alice, as: try bob.identity(), grantID: grant.grantID, secret: grant.secret)
        #expect(String(decoding: first.frame, as: UTF8.self).contains("accepted"))
        let replay = try rawAnswer(from: alice, as: try bob.identity(), grantID: grant.grantID, secret: grant.secret, reuse: (first.challenge, first.proof))
        #expect(String(decoding: replay.frame, as: UTF8.self).contains("lapsed"), "a captured proof does not fit a fresh challenge")
        // Carol has Bob's whole grant (id and secret) but her own key: the grant is bound to Bob.
        let stolen = try rawAnswer(from: alice, as: try carol.identity(), grantID: grant.grantID, secret: grant.secret)
        #expect(String(decoding: stolen.frame, as: UTF8.self).contains("lapsed"))
        // Even claiming to be Bob in the MAC does not help: the connection's key is Carol's.
        let posing = try rawAnswer(from: alice, as: try carol.identity(), grantID: grant.grantID, secret: grant.secret, proveAs: bob.endpoint)
        #expect(String(decoding: posing.frame, as: UTF8.self).contains("lapsed"))
        let log = try alice.stopServer()
        #expect(log.contains("reason=bad-proof") && log.contains("reason=wrong-endpoint"))
    }

    @Test func grantsContactsAndHeldOffersSurviveRestartingTheNodes() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        try pair(issuer: alice, holder: bob, label: "alice")
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        let held = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-persist"), "--files", "1", "--bytes", "1"])
        #expect(held["state"] as? String == "held")
        let before = try alice.ok(["--json", "grants", "list"])
        let port = alice.port
        try alice.stopServer()

        try alice.startServer(port: port)
        defer { _ = try? alice.stopServer() }
        #expect(try alice.ok(["--json", "grants", "list"]) == before)
        #expect(try alice.json(["node", "show"])["endpoint_id"] as? String == alice.endpointHex, "the endpoint key survives")
        let pulled = try bob.json(["pull-offers", "--check-now"])
        #expect((pulled["counts"] as? [String: Int])?["collected"] == 1, "the held offer survived the restart")
    }

    @Test func aStaleAddressFailsFastWithAnActionableMessage() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), stranger = LinkTestNode()
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        try alice.ok(["settings", "set", "link.connect-timeout-seconds", "2"])

        // Nothing listens there any more.
        var start = Date()
        let refused = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t1"), "--files", "1", "--bytes", "1"])
        #expect(Date().timeIntervalSince(start) < 2)
        #expect((refused["message"] as? String)?.hasPrefix("nothing answers at the contact's last known address") == true)

        // A UDP socket that never answers the handshake: bounded by the connect timeout, not a hang.
        let (listener, address) = try RawPeer.staller(on: "127.0.0.1")
        defer { close(listener) }
        try alice.database().execute("UPDATE contacts SET last_known_addr = ?", [address])
        start = Date()
        let silent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t2"), "--files", "1", "--bytes", "1"])
        #expect(Date().timeIntervalSince(start) < 4)
        #expect((silent["message"] as? String)?.contains("within 2 s") == true)

        // Someone else now answers at the address: refused by key, never by name.
        try stranger.startServer()
        defer { _ = try? stranger.stopServer() }
        try alice.database().execute("UPDATE contacts SET last_known_addr = ?", [stranger.address])
        let other = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t3"), "--files", "1", "--bytes", "1"])
        #expect((other["message"] as? String)?.hasPrefix("another device now answers") == true)
        #expect(try stranger.scalar("SELECT count(*) FROM incoming_offers") == 0)
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'held'") == 3, "every offer is held for the next pull")
    }

    @Test func deletingAContactRemovesBothDirectionsAndRevokesTheIssuedSide() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try pair(issuer: bob, holder: alice, label: "bob")
        let deleted = try alice.json(["contacts", "delete", "bob"])
        #expect(deleted["peers_notified"] as? Int == 1)
        #expect(try alice.scalar("SELECT count(*) FROM contacts") == 0)
        #expect(try alice.scalar("SELECT count(*) FROM grants_held") == 0)
        #expect(try alice.scalar("SELECT count(*) FROM grants_issued WHERE revoke_reason = 'revoked'") == 1)
        #expect(try bob.scalar("SELECT count(*) FROM grants_held WHERE peer_revoked_at IS NOT NULL") == 1, "the best-effort notice arrived")
    }

    @Test func anOfferOverARevokedOrAnExpiredGrantIsRefusedAndTheSenderIsToldWhich() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), carol = LinkTestNode()
        // Bob lets Alice and Carol reach him; then he revokes Alice, and Carol's 30-day grant goes idle.
        try bob.startServer(now: "@\(Int(Date().timeIntervalSince1970) + 31 * 86_400)")
        defer { _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try carol.ok(["grants", "accept", "--label", "bob", "--addr", bob.address],
                     stdin: try bob.ok(["grants", "issue", "--to", carol.endpointHex, "--lifetime", "30d"]))
        try bob.ok(["grants", "revoke", "--peer", alice.endpointHex])

        let revoked = try alice.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t"), "--files", "1", "--bytes", "1"])
        #expect(revoked.exitCode == 69 && revoked.stderr.contains("no longer reachable (the other device removed this one)"))
        let expired = try carol.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(carol, "t"), "--files", "1", "--bytes", "1"])
        #expect(expired.exitCode == 69 && expired.stderr.contains("no longer reachable (the pairing lapsed) — pair again"))
        for node in [alice, carol] {
            #expect(try node.scalar("SELECT count(*) FROM grants_held") == 0, "the dead grant is dropped")
            #expect(try node.scalar("SELECT count(*) FROM held_offers") == 0, "a refused offer is not held")
        }
        #expect(try alice.ok(["contacts", "list"]).contains("no longer reachable — pair again (the other device removed this one)"))
        #expect(try carol.ok(["contacts", "list"]).contains("no longer reachable — pair again (the pairing went unused too long)"))
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 0)
    }
}
