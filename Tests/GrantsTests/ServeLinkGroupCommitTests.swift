import Cryptography
import Foundation
@testable import Grants
import Runner
import Testing
import TestSupport

/// `serve-link` writes every connection's offers through one group-commit writer and answers an offer only once the
/// commit holding it returned: an offer a sender saw acknowledged survives a SIGKILL of the real binary at any
/// moment. The model is what the senders observed (each "pending" answer they read), not what the server counted.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct ServeLinkGroupCommitTests {
    /// What the dialling threads saw: the offer ids answered "pending", and the attempts that failed.
    final class Observed: @unchecked Sendable {
        // @unchecked: every field is touched only under `lock`.
        private let lock = NSLock()
        private var acknowledged: [String] = []
        private var failures = 0
        private var stopping = false

        func acknowledge(_ id: String) { lock.withLock { acknowledged.append(id) } }
        func fail() { lock.withLock { failures += 1 } }
        func stop() { lock.withLock { stopping = true } }
        var isStopping: Bool { lock.withLock { stopping } }
        var acknowledgedIDs: [String] { lock.withLock { acknowledged } }
        var failedAttempts: Int { lock.withLock { failures } }
    }

    /// A holder's loaded grant and identity, for its dialling threads.
    struct Sender: @unchecked Sendable {
        // @unchecked: read-only after loading; HeldGrant carries the grant secret's bytes.
        let identity: NodeIdentity
        let grant: HeldGrant
    }

    @Test func everyOfferASenderSawAcknowledgedIsInTheStoreAfterServeLinkIsKilledUnderLoad() throws {
        let alice = LinkTestNode()
        try alice.set(["link.max-connections-per-address": "4096", "link.max-connections": "4096",
                       "limits.max-pending-offers": "10000", "limits.offers-per-hour": "1000"])
        try alice.startServer()
        let port = alice.port
        var senders: [Sender] = []
        for _ in 0..<6 {
            let holder = LinkTestNode()
            try pair(issuer: alice, holder: holder, label: "alice")
            let database = try holder.database()
            let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
            let grant = try #require(try HeldGrants(database: database, vault: try holder.vault()).usable(contactID: contactID))
            senders.append(Sender(identity: try holder.identity(), grant: grant))
        }
        let target = try LinkAddress.parse(alice.address)
        let server = alice.endpoint
        let observed = Observed()
        let group = DispatchGroup()
        for index in 0..<24 {
            let sender = senders[index % senders.count]
            group.enter()
            Thread {
                defer { group.leave() }
                while !observed.isStopping {
                    do {
                        let connection = try LinkConnection.dial(target, expected: server, protocolName: .offer, identity: sender.identity, connectTimeout: 2)
                        defer { connection.abort() }
                        guard try ProofExchange.prove(connection, grant: sender.grant, identity: sender.identity) == .accepted else { observed.fail(); continue }
                        let offerID = Hex.encode(try SecureRandom.bytes(count: 16))
                        let offer = OfferPayload(offerID: offerID, ticket: "kill-test", senderName: nil, fileCount: 1, totalBytes: 1)
                        guard case .object(let fields) = offer.json else { observed.fail(); continue }
                        try connection.send(.object([("type", "offer")] + fields))
                        let reply = try connection.receive()
                        if try reply.string("result", maxBytes: 16) == "pending" { observed.acknowledge(offerID) } else { observed.fail() }
                    } catch {
                        observed.fail()
                        usleep(20_000)
                    }
                }
            }.start()
        }
        for round in 0..<4 {
            if round > 0 { try alice.startServer(port: port) }
            usleep(1_500_000)
            alice.killServer()
        }
        observed.stop()
        group.wait()
        // After the last kill: start again (SQLite recovers the store), then look at what it holds.
        try alice.startServer(port: port)
        try alice.stopServer()
        let stored = Set(try alice.database().query("SELECT offer_id FROM incoming_offers").map { row -> String in try row.get(0) })
        let acknowledged = observed.acknowledgedIDs
        let lost = acknowledged.filter { !stored.contains($0) }
        #expect(acknowledged.count >= 100, "the load kept the server busy: \(acknowledged.count) acknowledged, \(observed.failedAttempts) failed")
        #expect(lost.count == 0, "\(lost.count) of \(acknowledged.count) acknowledged offers are not in the store")
    }

    enum Mutation: String, CaseIterable { case deleted, replacedByAnOlderCopy, walDeleted }

    @Test(arguments: Mutation.allCases) func serveLinkStopsWith73AndAnswersNoMoreOffersWhenItsStoreFileIsGone(_ mutation: Mutation) throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        _ = alice.endpointHex
        let copy = alice.home.file("older-copy.sqlite")
        try alice.startServer()
        try pair(issuer: alice, holder: bob, label: "alice")
        if mutation == .replacedByAnOlderCopy {
            // A consistent older copy (the backup an operator would restore), made while the server runs.
            _ = try alice.database().execute("VACUUM INTO ?", [copy])
        }
        let first = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "before"), "--files", "1", "--bytes", "1"])
        #expect(first["state"] as? String == "delivered", "\(first)")
        switch mutation {
        case .deleted: #expect(unlink(alice.store) == 0)
        case .replacedByAnOlderCopy: #expect(rename(copy, alice.store) == 0)
        case .walDeleted: #expect(unlink(alice.store + "-wal") == 0)
        }
        let second = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "after"), "--files", "1", "--bytes", "1"])
        #expect(second["state"] as? String != "delivered", "an offer was acknowledged into a store file no path leads to: \(second)")
        let server = try #require(alice.server)
        let deadline = Date().addingTimeInterval(20)
        while server.process.isRunning, Date() < deadline { usleep(20_000) }
        #expect(!server.process.isRunning, "serve-link stopped by itself")
        let result = try server.wait(timeout: 5)
        #expect(result.exitCode == 73, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains("no longer the one this server opened") }
        #expect(lines.count == 1, "\(result.stderr)")
        if mutation == .deleted { #expect(!FileManager.default.fileExists(atPath: alice.store), "no new empty store was made at the path") }
    }
}
