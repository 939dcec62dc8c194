import Foundation
@testable import Grants
import Testing
import TestSupport

/// The reachability mitigation of docs/protocols/grants-and-link.md §5: a contact's cached address follows it after each successful connection.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct ContactAddressTests {
    func address(of label: String, on node: LinkTestNode) throws -> String? {
        let contacts = try #require(try JSONSerialization.jsonObject(with: Data(try node.ok(["--json", "contacts", "list"]).utf8)) as? [[String: Any]])
        return contacts.first { $0["label"] as? String == label }?["address"] as? String
    }

    @Test func aContactThatMovedIsReachableAgainAfterItConnectsWithItsNewAddress() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        // Bob knows Alice at an address she no longer listens on (port 9, discard: nothing answers).
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:9")
        let stale = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-to-alice-1"), "--files", "1", "--bytes", "1"])
        #expect(stale["state"] as? String == "held")

        // Alice tells where she listens; her next offer to Bob refreshes his cached address for her.
        #expect(try alice.run(["settings", "set", "link.advertise-address", "not an address"]).exitCode == 64)
        _ = try alice.ok(["settings", "set", "link.advertise-address", alice.address])
        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-to-bob-1"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered")
        #expect(try address(of: "alice", on: bob) == alice.address)

        // Now Bob reaches her live.
        let live = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-to-alice-2"), "--files", "1", "--bytes", "1"])
        #expect(live["state"] as? String == "delivered")
    }

    @Test func aPullAlsoRefreshesTheAddressAndANodeThatAdvertisesNothingLeavesItAlone() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        defer { _ = try? alice.stopServer(); _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:9")

        // Without link.advertise-address Alice's pull tells nothing.
        _ = try alice.json(["pull-offers", "--check-now"])
        #expect(try address(of: "alice", on: bob) == "127.0.0.1:9")

        _ = try alice.ok(["settings", "set", "link.advertise-address", alice.address])
        _ = try alice.json(["pull-offers", "--check-now"], now: "@\(Int(Date().timeIntervalSince1970) + 600)")
        #expect(try address(of: "alice", on: bob) == alice.address)
    }
}
