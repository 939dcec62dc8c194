import Foundation
import Glibc
@testable import Grants
import QUIC
import Runner
import Testing
import TestSupport

/// A hostile contact's link endpoint (QUIC): accepts Bob's proof, then sends an `offers` frame one byte every half
/// second on the stream for up to 30 s — a pull it answers would take minutes with per-read timeouts.
final class DribblingContact: QUICServerDelegate, @unchecked Sendable {
    // @unchecked: `cutAfter` is read and written only while `lock` is held; the rest is immutable.
    let endpoint: QUICEndpoint
    let address: String
    private let lock = NSLock()
    private var cutAfter: TimeInterval?

    init(identity: NodeIdentity, on host: String) throws {
        endpoint = try QUICEndpoint.listen(on: try #require(QUICAddress.resolve(host: host, port: 0).first), identity: try LinkIdentity.quic(identity),
                                           alpns: LinkProtocolName.allCases.map(\.rawValue),
                                           timeouts: QUICTimeouts(handshakeSeconds: 10, idleSeconds: 60), shouldStop: { false })
        address = "\(host):\(endpoint.port)"
        endpoint.start(delegate: self)
    }

    func admit(_ address: QUICAddress) -> QUICAdmission { .admitted }
    func refused(_ address: QUICAddress) {}
    func abandoned(_ address: QUICAddress, because error: QUICError?, heldSlot: Bool) {}

    func accepted(_ stream: QUICConnection) {
        Thread { [self] in
            let deadlines = LinkDeadlines(handshakeSeconds: 10, messageSeconds: 60, connectionSeconds: 60)
            guard let connection = try? LinkConnection.accept(stream, deadlines: deadlines, start: QUICConnection.clock.now()) else { return }
            defer { connection.abort() }
            do {
                try connection.send(LinkWire.challenge([UInt8](repeating: 7, count: GrantProof.challengeCount)))
                _ = try connection.receive()
                try connection.send(LinkWire.answer(.accepted))
                _ = try connection.receive()
            } catch { return }
            let body = Array(#"{"type":"offers","offers":[]}"#.utf8)
            let frame: [UInt8] = [0, 0, 0, UInt8(body.count)] + body
            let cut = RawPeer.dribble(frame, every: 0.5, giveUpAfter: 30, write: connection.sendBytes, closed: { connection.isEnded })
            self.lock.lock(); self.cutAfter = cut; self.lock.unlock()
        }.start()
    }

    /// Seconds into the dribble when the puller hung up (nil: it held on, or never came).
    var hungUpAfter: TimeInterval? { lock.lock(); defer { lock.unlock() }; return cutAfter }

    deinit { endpoint.stop() }
}

/// `pull-offers` under slow contacts: concurrent dials, a deadline per contact, a budget per pass.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct PullDeadlineTests {
    @Test func aStallingAndADribblingContactDoNotDelayAGoodContactsOffersAndAreSkippedForTime() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), adam = LinkTestNode(), abel = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        let held = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-for-bob"), "--files", "1", "--bytes", "1"])
        #expect(held["state"] as? String == "held")

        // Sorted by label, both hostile contacts come before Alice.
        let staller = try RawPeer.staller(on: "127.0.0.2")
        defer { close(staller.fd) }
        try pair(issuer: adam, holder: bob, label: "adam", address: staller.address)
        try bob.ok(["grants", "issue", "--to", adam.endpointHex])   // Bob takes offers only from holders of his grants
        let dribbler = try DribblingContact(identity: try abel.identity(), on: "127.0.0.3")
        try pair(issuer: abel, holder: bob, label: "abel", address: dribbler.address)
        try bob.ok(["grants", "issue", "--to", abel.endpointHex])
        try bob.set(["pull-offers.contact-timeout-seconds": "6", "pull-offers.pass-budget-seconds": "20"])

        let pass = try JobProcess.start(["--store", bob.store, "--json", "pull-offers", "--check-now"], environment: bob.environment)
        var deliveredWhileHeld = false
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline && pass.process.isRunning {
            if try bob.scalar("SELECT count(*) FROM incoming_offers") == 1 {
                // The dribbling contact, first in label order, is still being held at that moment.
                deliveredWhileHeld = pass.process.isRunning && dribbler.hungUpAfter == nil
                break
            }
            usleep(20_000)
        }
        #expect(deliveredWhileHeld, "Alice's offer arrived while the pass was still held by the slow contacts")

        let result = try pass.wait(timeout: 30)
        #expect(result.exitCode == 0, "\(result.stderr)")
        let object = try result.jsonObject()
        let counts = try #require(object["counts"] as? [String: Int])
        #expect(counts["contacts"] == 3 && counts["collected"] == 1 && counts["skipped_for_time"] == 2 && counts["unreachable"] == 0, "\(counts)")
        #expect((object["details"] as? [String: Any])?["skipped_for_time"] as? [String] == ["abel", "adam"])
        #expect(try #require(object["duration_ms"] as? Int) < 20_000, "within the pass budget")
        #expect(try alice.scalar("SELECT count(*) FROM held_offers WHERE state = 'delivered'") == 1)
        let noticeBy = Date().addingTimeInterval(10)      // the dribbler looks between two bytes
        while dribbler.hungUpAfter == nil && Date() < noticeBy { usleep(50_000) }
        #expect(dribbler.hungUpAfter != nil, "the dribbling contact was hung up on, not waited out")
        for label in ["abel", "adam", "alice"] { #expect(!result.stderr.contains(label), "no contact label in the logs") }
    }

    @Test func thePassBudgetEndsThePassAndContactsNotReachedInTimeAreSkippedAndDialledFirstNextPass() throws {
        let bob = LinkTestNode()
        var stallers: [(fd: Int32, address: String)] = []
        defer { stallers.forEach { close($0.fd) } }
        for (index, label) in ["c1", "c2", "c3"].enumerated() {
            let issuer = LinkTestNode()
            let staller = try RawPeer.staller(on: "127.0.0.\(4 + index)")
            stallers.append(staller)
            try pair(issuer: issuer, holder: bob, label: label, address: staller.address)
            try bob.ok(["grants", "issue", "--to", issuer.endpointHex])
        }
        try bob.set(["pull-offers.parallel-dials": "1", "pull-offers.contact-timeout-seconds": "2", "pull-offers.pass-budget-seconds": "3"])

        let start = Date()
        let pass = try bob.json(["pull-offers", "--check-now"])
        #expect(Date().timeIntervalSince(start) < 15, "the 3 s budget ends the pass")
        let counts = try #require(pass["counts"] as? [String: Int])
        #expect(counts["contacts"] == 3 && counts["skipped_for_time"] == 3 && counts["unreachable"] == 0, "\(counts)")
        #expect((pass["details"] as? [String: Any])?["skipped_for_time"] as? [String] == ["c1", "c2", "c3"])
        #expect(RawPeer.hasPendingConnection(stallers[0].fd) && RawPeer.hasPendingConnection(stallers[1].fd))
        #expect(!RawPeer.hasPendingConnection(stallers[2].fd), "the budget ran out before c3 was dialled")
        #expect(try bob.scalar("SELECT count(*) FROM contacts WHERE last_pull_at IS NULL") == 1, "c3 is not counted as pulled")

        // The next pass: c1 and c2 were pulled recently; c3, skipped without a dial, is dialled now.
        let next = try bob.json(["pull-offers", "--check-now"])
        let nextCounts = try #require(next["counts"] as? [String: Int])
        #expect(nextCounts["recent"] == 2 && nextCounts["contacts"] == 1 && nextCounts["skipped_for_time"] == 1, "\(nextCounts)")
        #expect(RawPeer.hasPendingConnection(stallers[2].fd))

        // Without --json the labels stay out of stdout (it may be a journal) as well as the logs.
        try bob.database().execute("UPDATE contacts SET last_pull_at = NULL")
        let human = try bob.run(["pull-offers", "--check-now"])
        #expect(human.exitCode == 0 && human.stdout.contains("skipped_for_time=3"), "\(human.stdout)")
        for label in ["c1", "c2", "c3"] { #expect(!human.stdout.contains(label) && !human.stderr.contains(label)) }
    }
}
