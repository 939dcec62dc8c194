import Foundation
import Glibc
@testable import Grants
import Runner
import Testing
import TestSupport

/// `serve-link` under slow and idle connections: concurrent service under caps, and absolute deadlines on the
/// handshake, each message and the whole connection, however a peer trickles its bytes.
@Suite struct ServeLinkStallTests {
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

    @Test func aRealPeersOfferIsDeliveredWhile200IdleOrSlowConnectionsAreOpen() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        // Long enough that none of the 200 is cut while Bob is served: they are all open throughout.
        try alice.set(["link.handshake-timeout-seconds": "60", "link.connection-timeout-seconds": "120"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")

        // 25 other loopback addresses × 8 connections (the default per-address cap): half idle, half stuck part-way
        // through a ClientHello.
        var attackers: [Int32] = []
        defer { attackers.forEach { close($0) } }
        for source in 2...26 {
            for index in 0..<8 {
                let fd = try RawPeer.connect(from: "127.0.0.\(source)", to: alice.port)
                if index % 2 == 1 { RawPeer.send(fd, RawPeer.helloStart) }
                attackers.append(fd)
            }
        }
        let overCap = try RawPeer.connect(from: "127.0.0.2", to: alice.port)
        defer { close(overCap) }
        #expect(RawPeer.closedByPeer(overCap, within: 10), "a ninth connection from one address is closed at once")

        let start = Date()
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-under-siege"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        #expect(Date().timeIntervalSince(start) < 10, "served within 10 s while 200 connections are open")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 1)
        #expect(attackers.filter(RawPeer.isOpen).count == 200, "the 200 were still open while Bob was served")

        // SIGTERM ends the listener promptly even with 200 connections open (each is cut at its next wait).
        let log = try alice.stopServer()
        #expect(log.contains("event=link-stopped connections=201 refused=1"), "\(log.suffix(400))")
        #expect(log.contains("event=link-connections-refused reason=cap-reached count=1"))
        #expect(!log.contains("127.0.0."), "no address in the log")
        #expect(!log.contains("category=stopped"), "connections cut by the stop are not logged one by one")
    }

    @Test func connectionsOverTheTotalOrPerAddressCapAreClosedAtOnceAndTheirSlotsComeBack() throws {
        let alice = LinkTestNode()
        try alice.set(["link.max-connections": "3", "link.max-connections-per-address": "2", "link.handshake-timeout-seconds": "60"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let first = try RawPeer.connect(from: "127.0.0.2", to: alice.port)
        let second = try RawPeer.connect(from: "127.0.0.2", to: alice.port)
        let thirdFromSame = try RawPeer.connect(from: "127.0.0.2", to: alice.port)
        #expect(RawPeer.closedByPeer(thirdFromSame, within: 10), "over the per-address cap")
        let other = try RawPeer.connect(from: "127.0.0.3", to: alice.port)
        let overTotal = try RawPeer.connect(from: "127.0.0.4", to: alice.port)
        #expect(RawPeer.closedByPeer(overTotal, within: 10), "over the total cap")
        #expect([first, second, other].allSatisfy(RawPeer.isOpen), "those under the caps are still being answered")

        // A connection that ends gives its slot back.
        close(first)
        var admitted = false
        let deadline = Date().addingTimeInterval(10)
        while !admitted && Date() < deadline {
            let retry = try RawPeer.connect(from: "127.0.0.4", to: alice.port)
            if RawPeer.closedByPeer(retry, within: 0.5) { close(retry) } else { admitted = true; close(retry) }
        }
        #expect(admitted, "the freed slot is taken by the next connection")
        [second, thirdFromSame, other, overTotal].forEach { close($0) }
    }

    @Test func anIdleConnectionIsClosedAtTheHandshakeDeadline() throws {
        let alice = LinkTestNode()
        try alice.set(["link.handshake-timeout-seconds": "2"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let idle = try RawPeer.connect(from: "127.0.0.2", to: alice.port)
        defer { close(idle) }
        #expect(RawPeer.closedByPeer(idle, within: 8), "closed by the 2 s handshake deadline")
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=timeout"))
    }

    @Test func aHandshakeSentOneByteAtATimeIsCutAtTheHandshakeDeadline() throws {
        let alice = LinkTestNode()
        try alice.set(["link.handshake-timeout-seconds": "2"])
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        let slow = try RawPeer.connect(from: "127.0.0.2", to: alice.port)
        defer { close(slow) }
        // A byte every 0.5 s would keep a per-read timeout from ever firing.
        let cut = RawPeer.dribble(RawPeer.helloStart, every: 0.5, giveUpAfter: 20, write: { RawPeer.send(slow, $0) }, closed: { !RawPeer.isOpen(slow) })
        #expect(cut != nil && cut! < 8, "cut at the 2 s handshake deadline, not held while bytes trickle: \(String(describing: cut))")
        let log = try alice.stopServer()
        #expect(log.contains("stage=handshake category=timeout"))
    }

    @Test func aRecordDribbledAfterAValidProofIsCutAtTheMessageAndAtTheConnectionDeadline() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")

        // The message deadline: 2 s for the whole offer frame, however its bytes trickle.
        try alice.set(["link.message-timeout-seconds": "2", "link.connection-timeout-seconds": "600"])
        try alice.startServer()
        var connection = try provenConnection(to: alice.address, of: alice, as: bob)
        var cut = RawPeer.dribble(Self.offerFrame, every: 0.3, giveUpAfter: 20, write: connection.sendBytes, closed: { !RawPeer.isOpen(connection.fd) })
        connection.close()
        #expect(cut != nil && cut! < 8, "cut at the 2 s message deadline: \(String(describing: cut))")

        // One TLS record whose own bytes trickle in below TLS (a 64-byte application-data record announced).
        connection = try provenConnection(to: alice.address, of: alice, as: bob)
        let record: [UInt8] = [0x17, 0x03, 0x03, 0x00, 0x40] + [UInt8](repeating: 0x5a, count: 64)
        let fd = connection.fd
        cut = RawPeer.dribble(record, every: 0.3, giveUpAfter: 20, write: { RawPeer.send(fd, $0) }, closed: { !RawPeer.isOpen(fd) })
        connection.close()
        #expect(cut != nil && cut! < 8, "a record trickled byte by byte is cut at the 2 s message deadline: \(String(describing: cut))")
        var log = try alice.stopServer()
        #expect(log.contains("stage=exchange category=timeout"))

        // The connection deadline: 4 s in all, even when each message may take a minute.
        try alice.set(["link.message-timeout-seconds": "60", "link.connection-timeout-seconds": "4"])
        try alice.startServer()
        connection = try provenConnection(to: alice.address, of: alice, as: bob)
        cut = RawPeer.dribble(Self.offerFrame, every: 0.3, giveUpAfter: 20, write: connection.sendBytes, closed: { !RawPeer.isOpen(connection.fd) })
        connection.close()
        #expect(cut != nil && cut! < 10, "cut at the 4 s connection deadline: \(String(describing: cut))")
        log = try alice.stopServer()
        #expect(log.contains("stage=exchange category=timeout"))
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 0, "nothing half-received is stored")
    }

    @Test func underSocketActivationTheSameHandshakeAndMessageDeadlinesApply() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")
        try alice.set(["link.handshake-timeout-seconds": "2", "link.message-timeout-seconds": "2"])
        let (listener, port) = try Socket.listen(try LinkAddress.parseListen("127.0.0.1:0"))
        defer { close(listener) }

        /// Like systemd with Accept=yes: accepts one connection and runs `job serve-link` with it on stdin.
        let aliceStore = alice.store, aliceEnvironment = alice.environment  // the node itself stays on this thread
        func activate() -> Thread {
            let thread = Thread {
                guard let fd = Socket.accept(listener, waitMilliseconds: 10_000) else { return }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: JobProcess.executablePath)
                process.arguments = ["--store", aliceStore, "serve-link"]
                process.environment = aliceEnvironment
                process.standardInput = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try? process.run()
                process.waitUntilExit()
            }
            thread.start()
            return thread
        }

        _ = activate()
        let idle = try RawPeer.connect(from: "127.0.0.2", to: port)
        defer { close(idle) }
        #expect(RawPeer.closedByPeer(idle, within: 8), "an idle connection on stdin is closed by the 2 s handshake deadline")

        _ = activate()
        let connection = try provenConnection(to: "127.0.0.1:\(port)", of: alice, as: bob)
        let cut = RawPeer.dribble(Self.offerFrame, every: 0.3, giveUpAfter: 20, write: connection.sendBytes, closed: { !RawPeer.isOpen(connection.fd) })
        connection.close()
        #expect(cut != nil && cut! < 8, "a dribbled offer on stdin is cut at the 2 s message deadline: \(String(describing: cut))")
        #expect(try alice.scalar("SELECT count(*) FROM incoming_offers") == 0)
    }
}
