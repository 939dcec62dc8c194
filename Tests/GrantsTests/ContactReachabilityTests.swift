import Foundation
@testable import Grants
import Testing
import TestSupport

/// `contacts list` tells reachable-now from deliver-later, and a contact whose grant died says "pair again" (docs/protocols/grants-and-link.md §5.1, §11.5).
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct ContactReachabilityTests {
    func reachability(_ node: LinkTestNode) throws -> [String: String] {
        let contacts = try #require(try JSONSerialization.jsonObject(with: Data(try node.ok(["--json", "contacts", "list"]).utf8)) as? [[String: Any]])
        var byLabel: [String: String] = [:]
        for contact in contacts { byLabel[contact["label"] as? String ?? ""] = contact["reachability"] as? String }
        return byLabel
    }

    @Test func theContactListTellsReachableNowFromDeliverLaterFromPairAgain() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try bob.startServer()
        try pair(issuer: bob, holder: alice, label: "bob")
        #expect(try reachability(alice)["bob"] == "untried")

        #expect(try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t1"), "--files", "1", "--bytes", "1"])["state"] as? String == "delivered")
        #expect(try reachability(alice)["bob"] == "reachable-now")
        #expect(try alice.ok(["contacts", "list"]).contains("bob  \(bob.endpoint.fingerprint)  reachable now"))

        // Bob goes away: the next offer is held, and the list says it will be delivered when he next checks.
        let port = bob.port
        _ = try bob.stopServer()
        #expect(try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t2"), "--files", "1", "--bytes", "1"])["state"] as? String == "held")
        #expect(try reachability(alice)["bob"] == "deliver-later")
        #expect(try alice.ok(["contacts", "list"]).contains("offers will be delivered when they next check"))

        // Back, he revokes Alice; her next attempt learns it, drops the dead entry and says to pair again.
        try bob.startServer(port: port)
        defer { _ = try? bob.stopServer() }
        _ = try bob.ok(["grants", "revoke", alice.endpoint.fingerprint])
        let refused = try alice.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t3"), "--files", "1", "--bytes", "1"])
        #expect(refused.exitCode == 69)
        #expect(try reachability(alice)["bob"] == "pair-again")
        #expect(try alice.ok(["contacts", "list"]).contains("no longer reachable — pair again"))
        // A further attempt says the same at once, without dialling.
        let again = try alice.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t4"), "--files", "1", "--bytes", "1"])
        #expect(again.exitCode == 69)
        #expect(again.stderr.contains("no longer reachable") && again.stderr.contains("pair again"))
    }

    @Test func aReinstalledPeerANewKeyAtTheSameAddressIsShownAsNoLongerRecognizedPairAgain() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), reinstalled = LinkTestNode()
        try bob.startServer()
        try pair(issuer: bob, holder: alice, label: "bob")
        #expect(try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t1"), "--files", "1", "--bytes", "1"])["state"] as? String == "delivered")
        // Bob's device is reinstalled: a new key answers at his address.
        let port = bob.port
        _ = try bob.stopServer()
        try reinstalled.startServer(port: port)
        defer { _ = try? reinstalled.stopServer() }
        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t2"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "held")
        // Before, the list said the held offer would be delivered when he next checks.
        #expect(try reachability(alice)["bob"] == "not-recognized")
        let listed = try alice.ok(["contacts", "list"])
        #expect(listed.contains("bob  \(bob.endpoint.fingerprint)  this device is no longer recognized — pair again"), "\(listed)")
        let contacts = try #require(try JSONSerialization.jsonObject(with: Data(try alice.ok(["--json", "contacts", "list"]).utf8)) as? [[String: Any]])
        #expect(contacts.first?["can_reach"] as? Bool == false)

        // The old device back at the address: one successful connection clears it.
        _ = try reinstalled.stopServer()
        try bob.startServer(port: port)
        defer { _ = try? bob.stopServer() }
        #expect(try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t3"), "--files", "1", "--bytes", "1"])["state"] as? String == "delivered")
        #expect(try reachability(alice)["bob"] != "not-recognized")
    }
}
