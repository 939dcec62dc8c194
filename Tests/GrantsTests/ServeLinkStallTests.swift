import Cryptography
import Foundation
import Glibc
@testable import Grants
import QUIC
import Runner
import Testing
import TestSupport

/// `serve-link` under half-open, flooding and slow peers over QUIC: caps on connections from their first packet,
/// absolute deadlines on the handshake, each message and the whole connection, and garbage that costs nothing.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct ServeLinkStallTests {
    /// Bob's `/vnidrop/offer/1` connection to `address` (Alice's), with the grant proven.
    func provenConnection(to address: String, of alice: LinkTestNode, as bob: LinkTestNode) throws -> LinkConnection {
        let connection = try LinkConnection.dial(try LinkAddress.parse(address), expected: alice.endpoint, protocolName: .offer,
                                                 identity: try bob.identity(), connectTimeout: 5,
                                                 deadlines: LinkDeadlines(handshakeSeconds: 5, messageSeconds: 60, connectionSeconds: 120))
        let database = try bob.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: try bob.vault()).usable(contactID: contactID))
        #expect(try ProofExchange.prove(connection, grant: grant, identity: try bob.identity()) == .accepted)
        return connection
    }

    /// A whole offer frame (length and JSON), to be dribbled.
    static let offerFrame: [UInt8] = {
        let body = Array(#"{"type":"offer","offer_id":"00112233445566778899aabbccddeeff","ticket":"dribbled","file_count":1,"total_bytes":1}"#.utf8)
        return [0, 0, UInt8(body.count >> 8), UInt8(body.count & 0xff)] + body
    }()

    @Test func aRealPeersOfferIsDeliveredWhile200HalfOpenHandshakesHoldTheirSlots() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        // Long enough that none of the 200 ends while Bob is served: they all hold their slots throughout.
        try alice.set(["link.handshake-timeout-seconds": "60", "link.connection-timeout-seconds": "120"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")

        // 25 other loopback addresses × 8 handshakes (the default per-address cap), each started and abandoned (one
        // address at a time: these clients never retransmit, so none of their first packets may be lost).
        var attackers: [HalfOpenPeer] = []
        var answered = 0
        for source in 2...26 {
            let batch = try (0..<8).map { _ in try HalfOpenPeer(from: "127.0.0.\(source)", to: alice.port, expecting: alice.endpoint) }
            answered += batch.filter { $0.answered(within: 5) }.count
            attackers += batch
        }
        #expect(answered == 200, "all 200 were admitted (the server answered each)")
        // The first 8 (from 127.0.0.2) started unproven and hold no slot; the 192 after them answered a Retry and do.
        let overCap = try HalfOpenPeer(from: "127.0.0.3", to: alice.port, expecting: alice.endpoint)
        #expect(!overCap.answered(within: 2), "a ninth proven handshake from one address is dropped unanswered")

        let start = Date()
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-under-siege"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        #expect(Date().timeIntervalSince(start) < 10, "served within 10 s while 200 handshakes are open")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 1)

        // SIGTERM ends the service promptly even with 200 half-open connections.
        let stopStart = Date()
        let log = try alice.stopServer()
        #expect(Date().timeIntervalSince(stopStart) < 10)
        #expect(log.contains("event=link-stopped connections=1 refused=1"), "\(log.suffix(400))")
        #expect(log.contains("event=link-connections-refused reason=cap-reached count=1"))
        #expect(!log.contains("127.0.0."), "no address in the log")
        #expect(!log.contains("stage=handshake category=timeout"), "none of the 200 reached its 60 s deadline")
    }

    @Test func spoofedFirstPacketsHoldNoMoreThanTheValidationThresholdAndARealClientIsStillServed() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.set(["link.max-connections": "12", "link.handshake-timeout-seconds": "60", "link.validate-addresses-above": "4"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        // 40 first packets from 10 addresses whose senders never hear what is sent back (as with forged sources).
        var spoofers: [HalfOpenPeer] = []
        for source in 2...11 {
            for _ in 0..<4 { spoofers.append(try HalfOpenPeer(from: "127.0.0.\(source)", to: alice.port, expecting: alice.endpoint, followsRetry: false)) }
        }
        let holding = spoofers.filter { $0.answered(within: 0.1) }.count
        #expect(holding == 4, "only the first 4 started a connection: \(holding)")
        #expect(spoofers.filter { $0.retries > 0 }.count == 36, "the others were sent a Retry and hold nothing")

        // Without Retry the 40 would fill all 12 slots for a minute; Bob's client answers the Retry and is served.
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-past-spoofers"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        let log = try alice.stopServer()
        #expect(log.contains("event=link-stopped connections=1 refused=0"), "\(log.suffix(400))")
    }

    @Test func eightSpoofedFirstPacketsCarryingAClientsAddressHoldNoSlotOfItsAndItIsStillServed() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        // The defaults: 8 connections per address, a Retry once 8 unproven handshakes are half-open.
        try alice.set(["link.handshake-timeout-seconds": "60"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        // 8 first packets carrying Bob's address (127.0.0.1) from a sender that never hears the answers, as forged
        // sources are: each starts a handshake that stays half-open for the whole test.
        let spoofers = try (0..<8).map { _ in
            try HalfOpenPeer(from: "127.0.0.1", to: alice.port, expecting: alice.endpoint, followsRetry: false)
        }
        #expect(spoofers.filter { $0.answered(within: 1) }.count == 8, "all 8 started a handshake")

        // Before, they held all 8 of 127.0.0.1's slots: Bob's dial, past the Retry, was dropped and his offer held.
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-past-forgers"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 1)
        let log = try alice.stopServer()
        #expect(log.contains("event=link-stopped connections=1 refused=0"), "\(log.suffix(400))")
        #expect(!log.contains("link-connections-refused"), "nothing was refused at the caps")
    }

    @Test func handshakesOverThePerAddressCapGetNoAnswerAndTheirSlotsComeBack() throws {
        let alice = LinkTestNode()
        // Every address proven by a Retry first, so each handshake takes a slot from its first packet on.
        try alice.set(["link.max-connections": "3", "link.max-connections-per-address": "2", "link.handshake-timeout-seconds": "3",
                       "link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let first = try HalfOpenPeer(from: "127.0.0.2", to: alice.port, expecting: alice.endpoint)
        let second = try HalfOpenPeer(from: "127.0.0.2", to: alice.port, expecting: alice.endpoint)
        #expect(first.answered(within: 5) && second.answered(within: 5))
        let thirdFromSame = try HalfOpenPeer(from: "127.0.0.2", to: alice.port, expecting: alice.endpoint)
        #expect(!thirdFromSame.answered(within: 1), "over the per-address cap")
        let other = try HalfOpenPeer(from: "127.0.0.3", to: alice.port, expecting: alice.endpoint)
        #expect(other.answered(within: 5), "another address is still admitted")
        // Over the total cap the oldest half-open handshake (the first) makes room.
        let overTotal = try HalfOpenPeer(from: "127.0.0.4", to: alice.port, expecting: alice.endpoint)
        #expect(overTotal.answered(within: 5), "over the total cap, the oldest half-open handshake is evicted")

        // Their handshake deadline ends the three half-open connections and gives their slots back.
        var admitted = false
        let deadline = Date().addingTimeInterval(12)
        while !admitted && Date() < deadline {
            admitted = try HalfOpenPeer(from: "127.0.0.4", to: alice.port, expecting: alice.endpoint).answered(within: 0.5)
        }
        #expect(admitted, "a freed slot is taken by the next connection")
        Thread.sleep(forTimeInterval: 4)   // every admitted half-open handshake reaches its 3 s deadline
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=timeout"))
        // Aggregated: the first timeout at once, the rest in one line when serving ends, never a line each.
        let lines = log.split(separator: "\n").filter { $0.contains("stage=handshake category=timeout") }
        #expect(lines.count <= 2, "\(lines.count) lines")
        let counted = lines.compactMap { $0.split(separator: " ").first { $0.hasPrefix("count=") }.flatMap { Int($0.dropFirst(6)) } }.reduce(0, +)
        #expect(counted >= 3, "every timed-out handshake is counted: \(counted)")
    }

    @Test func aHandshakeKeptBusyWithRepeatedPacketsIsStillCutAtTheHandshakeDeadline() throws {
        let alice = LinkTestNode()
        try alice.set(["link.handshake-timeout-seconds": "2", "link.max-connections-per-address": "1", "link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let busy = try HalfOpenPeer(from: "127.0.0.2", to: alice.port, expecting: alice.endpoint)
        #expect(busy.answered(within: 5))
        #expect(!(try HalfOpenPeer(from: "127.0.0.2", to: alice.port, expecting: alice.endpoint).answered(within: 0.5)), "the one slot is taken")
        // The peer retransmits every 0.3 s: an idle timer would never fire; the absolute deadline does.
        let start = Date()
        var freedAfter: TimeInterval?
        while freedAfter == nil && Date().timeIntervalSince(start) < 15 {
            busy.resend()
            if try HalfOpenPeer(from: "127.0.0.2", to: alice.port, expecting: alice.endpoint).answered(within: 0.3) {
                freedAfter = Date().timeIntervalSince(start)
            }
        }
        #expect(freedAfter != nil && freedAfter! < 8, "cut at the 2 s handshake deadline: \(String(describing: freedAfter))")
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=timeout"))
    }

    @Test func aRealClientEvictsTheOldestHalfOpenHandshakeWhenTheTableIsFullAndIsServed() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.set(["link.max-connections": "4", "link.handshake-timeout-seconds": "60", "link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        // 4 addresses that answer the Retry and then stall: every slot is held by a half-open handshake for a minute.
        let stalled = try (2...5).map { try HalfOpenPeer(from: "127.0.0.\($0)", to: alice.port, expecting: alice.endpoint) }
        #expect(stalled.filter { $0.answered(within: 5) }.count == 4, "all 4 hold a slot")

        // Before, Bob was dropped at the total cap and his offer held.
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-evicting"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        let log = try alice.stopServer()
        #expect(log.contains("event=link-stopped connections=1 refused=0"), "\(log.suffix(400))")
    }

    /// A real link connection to Alice dialled from the loopback address `source`, its hello sent: it has sent its
    /// first message and holds a slot. `grant` proves it too, as an idle contact's connection would be.
    func idleConnection(from source: String, to alice: LinkTestNode, identity: NodeIdentity, grant: HeldGrant? = nil) throws -> LinkConnection {
        let address = try #require(QUICAddress.resolve(host: "127.0.0.1", port: alice.port).first)
        let local = try #require(QUICAddress.resolve(host: source, port: 0).first)
        let stream = try QUICEndpoint.dial(address, from: local, expected: alice.endpoint.bytes, alpn: LinkProtocolName.offer.rawValue,
                                           identity: try LinkIdentity.quic(identity), timeouts: QUICTimeouts(handshakeSeconds: 5, idleSeconds: 120),
                                           handshakeDeadline: QUICConnection.clock.deadline(in: 5), shouldStop: { false })
        let connection = LinkConnection(stream: stream, remote: alice.endpoint, protocolName: .offer, dialled: true,
                                        deadline: QUICConnection.clock.deadline(in: 120), messageSeconds: 60)
        try connection.send(LinkWire.hello)
        if let grant { #expect(try ProofExchange.prove(connection, grant: grant, identity: identity) == .accepted) }
        return connection
    }

    @Test func idleConnectionsFromSeveralAddressesHoldingEverySlotDoNotLockAGenuineOfferOut() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        // Every message may take a minute and the connection two: idle connections would keep their slots that long.
        try alice.set(["link.max-connections": "8", "link.max-connections-per-address": "2", "link.message-timeout-seconds": "60",
                       "link.connection-timeout-seconds": "120", "link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        let database = try bob.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: try bob.vault()).usable(contactID: contactID))
        // Four addresses hold all 8 slots: from two, connections that sent their hello and then nothing (never proving
        // a grant); from the other two, connections that proved Bob's grant and then went idle.
        let stranger = NodeIdentity(privateKey: try Ed25519PrivateKey.generate())
        let unproven = try [2, 2, 3, 3].map { try idleConnection(from: "127.0.0.\($0)", to: alice, identity: stranger) }
        let proven = try [4, 4, 5, 5].map { try idleConnection(from: "127.0.0.\($0)", to: alice, identity: try bob.identity(), grant: grant) }
        defer { (unproven + proven).forEach { $0.abort() } }
        Thread.sleep(forTimeInterval: 1.5)

        // Before, Bob was dropped at the total cap and both offers were held.
        for ticket in ["ticket-idle-1", "ticket-idle-2"] {
            let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, ticket), "--files", "1", "--bytes", "1"])
            #expect(sent["state"] as? String == "delivered", "\(sent)")
            Thread.sleep(forTimeInterval: 1)
        }
        // The first offer took an unproven connection's slot; once Bob's connection ended its slot was free again.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(unproven.filter(\.isEnded).count == 1, "one unproven connection evicted")
        #expect(proven.allSatisfy { !$0.isEnded }, "proven idle connections are evicted only after the unproven ones")
        let log = try alice.stopServer()
        #expect(log.contains("refused=0 evicted=1"), "\(log.suffix(600))")
        #expect(!log.contains("category=truncated"), "an eviction is not logged as a failure: \(log.suffix(600))")
    }

    @Test func whenOnlyProvenIdleConnectionsHoldEverySlotTheLongestIdleMakesRoom() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.set(["link.max-connections": "4", "link.max-connections-per-address": "2", "link.message-timeout-seconds": "60",
                       "link.connection-timeout-seconds": "120", "link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        let database = try bob.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: try bob.vault()).usable(contactID: contactID))
        var proven: [LinkConnection] = []
        for source in [2, 2, 3, 3] {
            proven.append(try idleConnection(from: "127.0.0.\(source)", to: alice, identity: try bob.identity(), grant: grant))
            Thread.sleep(forTimeInterval: 0.2)
        }
        defer { proven.forEach { $0.abort() } }
        Thread.sleep(forTimeInterval: 1.2)
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-proven-idle"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(proven.map(\.isEnded) == [true, false, false, false], "the longest idle went")
    }

    @Test func aCompletedHandshakeThatSendsNoFirstMessageLosesItsSlotAtTheHandshakeDeadline() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        // Each message may take a minute, but the first one (the hello) must come within the 2 s handshake deadline.
        try alice.set(["link.handshake-timeout-seconds": "2", "link.message-timeout-seconds": "60", "link.connection-timeout-seconds": "120",
                       "link.max-connections-per-address": "1", "link.validate-addresses-above": "0"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        // A real QUIC client from 127.0.0.1 that completes the handshake and then says nothing.
        let address = try #require(QUICAddress.resolve(host: "127.0.0.1", port: alice.port).first)
        let silent = try QUICEndpoint.dial(address, expected: alice.endpoint.bytes, alpn: LinkProtocolName.offer.rawValue,
                                           identity: try LinkIdentity.quic(try bob.identity()),
                                           timeouts: QUICTimeouts(handshakeSeconds: 5, idleSeconds: 120),
                                           handshakeDeadline: QUICConnection.clock.deadline(in: 5), shouldStop: { false })
        defer { silent.abort() }
        #expect(!(try HalfOpenPeer(from: "127.0.0.1", to: alice.port, expecting: alice.endpoint).answered(within: 0.5)), "the one slot is taken")
        let start = Date()
        var freedAfter: TimeInterval?
        while freedAfter == nil && Date().timeIntervalSince(start) < 15 {
            if try HalfOpenPeer(from: "127.0.0.1", to: alice.port, expecting: alice.endpoint).answered(within: 0.3) {
                freedAfter = Date().timeIntervalSince(start)
            }
        }
        // Before, it kept the slot until the 60 s message deadline.
        #expect(freedAfter != nil && freedAfter! < 8, "cut at the 2 s handshake deadline: \(String(describing: freedAfter))")
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=timeout"), "\(log.suffix(400))")
    }

    @Test func garbageDatagramsAreDroppedWithoutStateOrLogWhileARealOfferIsServed() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        var generator = SystemRandomNumberGenerator()
        for source in 2...5 {
            let fd = try RawPeer.udp(from: "127.0.0.\(source)", to: alice.port)
            defer { close(fd) }
            for index in 0..<500 {
                var bytes = (0..<(index % 2 == 0 ? 1200 : 1 + index % 300)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if index % 4 == 0 {
                    // Shaped like a QUIC v1 Initial (long header, version 1, 8-byte ids) with a garbage payload.
                    bytes.replaceSubrange(0..<6, with: [0xc3, 0, 0, 0, 1, 8])
                    bytes[14] = 8
                }
                RawPeer.send(fd, bytes)
            }
            #expect(!RawPeer.answered(fd, within: 0.5), "garbage gets no answer")
        }
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-after-garbage"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        let log = try alice.stopServer()
        #expect(log.contains("event=link-stopped connections=1 refused=0"), "\(log.suffix(400))")
        #expect(!log.contains("link-closed") && !log.contains("link-failed"), "no log line per garbage datagram: \(log.suffix(400))")
    }

    @Test func aStreamDribbledAfterAValidProofIsCutAtTheMessageAndAtTheConnectionDeadline() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")

        // The message deadline: 2 s for the whole offer frame, however its bytes trickle.
        try alice.set(["link.message-timeout-seconds": "2", "link.connection-timeout-seconds": "600"])
        try alice.startServer()
        var connection = try provenConnection(to: alice.address, of: alice, as: bob)
        var cut = RawPeer.dribble(Self.offerFrame, every: 0.3, giveUpAfter: 20, write: connection.sendBytes, closed: { connection.isEnded })
        connection.abort()
        #expect(cut != nil && cut! < 8, "cut at the 2 s message deadline: \(String(describing: cut))")
        var log = try alice.stopServer()
        #expect(log.contains("stage=exchange category=timeout"))

        // The connection deadline: 4 s in all, even when each message may take a minute.
        try alice.set(["link.message-timeout-seconds": "60", "link.connection-timeout-seconds": "4"])
        try alice.startServer()
        connection = try provenConnection(to: alice.address, of: alice, as: bob)
        cut = RawPeer.dribble(Self.offerFrame, every: 0.3, giveUpAfter: 20, write: connection.sendBytes, closed: { connection.isEnded })
        connection.abort()
        #expect(cut != nil && cut! < 10, "cut at the 4 s connection deadline: \(String(describing: cut))")
        log = try alice.stopServer()
        #expect(log.contains("stage=exchange category=timeout"))
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 0, "nothing half-received is stored")
    }

    @Test func underSocketActivationTheDeadlinesApplyAndTheServiceExitsWhenIdle() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.set(["link.handshake-timeout-seconds": "2", "link.message-timeout-seconds": "2", "link.idle-exit-seconds": "3"])
        // Like systemd with ListenDatagram= and Accept=no: one UDP socket, handed to one `job serve-link` on stdin.
        let (socketFD, address) = try RawPeer.staller(on: "127.0.0.1")
        try pair(issuer: alice, holder: bob, label: "alice", address: address)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: JobProcess.executablePath)
        process.arguments = ["--store", alice.store, "serve-link"]
        process.environment = alice.environment
        process.standardInput = FileHandle(fileDescriptor: socketFD, closeOnDealloc: true)
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()

        let connection = try provenConnection(to: address, of: alice, as: bob)
        let cut = RawPeer.dribble(Self.offerFrame, every: 0.3, giveUpAfter: 20, write: connection.sendBytes, closed: { connection.isEnded })
        connection.abort()
        #expect(cut != nil && cut! < 8, "a dribbled offer is cut at the 2 s message deadline: \(String(describing: cut))")
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-activated"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 1, "only the whole offer is stored")

        // Idle for link.idle-exit-seconds (3 s): the service exits by itself.
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        #expect(!process.isRunning, "exited when idle")
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("event=link-stopped connections=2"), "\(log.suffix(400))")

        let notASocket = try alice.run(["serve-link"])
        #expect(notASocket.exitCode == 64 && notASocket.stderr.contains("no UDP socket was passed"), "\(notASocket.stderr)")
    }
}
