import Foundation
@testable import Grants
import Testing
import TestSupport

/// The link's handshakes are not held back by the endpoint: a dialled connection's first flight leaves before
/// the event loop's first wait, and handshake datagrams are not paced off ngtcp2's 333 ms initial RTT guess.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct LinkLatencyTests {
    @Test func thirtyDialsInARowEachCompleteHandshakeAndProofWellUnderAQuarterSecond() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer()
        defer { _ = try? alice.stopServer() }
        try pair(issuer: alice, holder: bob, label: "alice")
        let identity = try bob.identity()
        let database = try bob.database()
        let contactID: Int64 = try #require(try database.scalar("SELECT id FROM contacts"))
        let grant = try #require(try HeldGrants(database: database, vault: try bob.vault()).usable(contactID: contactID))
        let start = Date()
        for _ in 0..<30 {
            let connection = try LinkConnection.dial(try LinkAddress.parse(alice.address), expected: alice.endpoint, protocolName: .offer,
                                                     identity: identity, connectTimeout: 5)
            #expect(try ProofExchange.prove(connection, grant: grant, identity: identity) == .accepted)
            connection.abort()
        }
        // Each took about 280 ms when the first flight waited for the loop's 250 ms poll (8 s for 30); now a few ms.
        #expect(Date().timeIntervalSince(start) < 5, "30 connect+proof rounds took \(Date().timeIntervalSince(start)) s")
    }
}
