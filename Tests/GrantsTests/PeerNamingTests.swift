import Foundation
@testable import Grants
import Testing
import TestSupport

/// Revoke and block name a device by label or a unique fingerprint prefix; `block list`; a grant carries a label.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct PeerNamingTests {
    func fingerprint(of node: LinkTestNode) throws -> String { try #require(try node.json(["node", "show"])["fingerprint"] as? String) }

    @Test func aGrantIssuedWithALabelNamesItsOneWayHolderInOffersAndRevokeTakesThatLabel() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try bob.startServer()
        defer { _ = try? bob.stopServer() }
        // Only Bob issues: Alice is a one-way holder, not a contact of Bob.
        let bundle = try bob.ok(["grants", "issue", "--to", alice.endpointHex, "--label", "Alice's phone"])
        _ = try alice.ok(["grants", "accept", "--label", "bob", "--addr", bob.address], stdin: bundle)
        let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "ticket-1"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered")
        let listing = try bob.ok(["offers", "list"])
        #expect(listing.contains("from Alice's phone"))
        #expect(!listing.contains("unlisted device"))
        let incoming = try #require(try bob.json(["offers", "list"])["incoming"] as? [[String: Any]])
        #expect(incoming.first?["from_label"] as? String == "Alice's phone")
        let issued = try #require(try bob.json(["grants", "list"])["issued"] as? [[String: Any]])
        #expect(issued.first?["label"] as? String == "Alice's phone")

        let revoked = try bob.json(["grants", "revoke", "Alice's phone"])
        #expect(revoked["revoked"] as? Int == 1)
        #expect(try bob.run(["grants", "revoke", "nobody by that name"]).exitCode == 65)
        #expect(try bob.run(["grants", "revoke", "Alice's phone", "--peer", alice.endpointHex]).exitCode == 64)
    }

    @Test func blockAndUnblockTakeALabelOrAUniqueFingerprintPrefixAndBlockListShowsThem() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), carol = LinkTestNode()
        try bob.startServer()
        defer { _ = try? bob.stopServer() }
        _ = try bob.ok(["grants", "issue", "--to", alice.endpointHex, "--label", "alice"])
        _ = try bob.ok(["grants", "issue", "--to", carol.endpointHex, "--label", "carol"])
        let carolPrint = try fingerprint(of: carol)
        let alicePrint = try fingerprint(of: alice)

        #expect(try bob.json(["block", "alice"])["changed"] as? Bool == true)
        // The shortest prefix that tells Carol from Alice (fingerprints are random: find it).
        let digits = carolPrint.filter { $0 != "-" }, other = alicePrint.filter { $0 != "-" }
        var length = 4
        while other.hasPrefix(digits.prefix(length)) { length += 1 }
        #expect(try bob.json(["block", String(digits.prefix(length))])["changed"] as? Bool == true)
        // A prefix shorter than 4 digits, or unknown, is refused with nothing changed.
        #expect(try bob.run(["block", String(digits.prefix(3))]).exitCode == 65)
        #expect(try bob.run(["block", "ffff-ffff-ffff-fff0"]).exitCode == 65 || alicePrint == "ffff-ffff-ffff-fff0")

        let list = try JSONSerialization.jsonObject(with: Data(try bob.ok(["--json", "block", "list"]).utf8)) as? [[String: Any]]
        #expect(Set(list?.compactMap { $0["label"] as? String } ?? []) == ["alice", "carol"])
        #expect(Set(list?.compactMap { $0["fingerprint"] as? String } ?? []) == [alicePrint, carolPrint])
        #expect(try bob.ok(["block", "list"]).contains(carolPrint))

        // Unblock by the full fingerprint, with its dashes.
        #expect(try bob.json(["unblock", carolPrint])["changed"] as? Bool == true)
        let after = try JSONSerialization.jsonObject(with: Data(try bob.ok(["--json", "block", "list"]).utf8)) as? [[String: Any]]
        #expect(after?.count == 1 && after?.first?["label"] as? String == "alice")
        // Alice, blocked, cannot offer.
        let bundle = try bob.ok(["grants", "issue", "--to", alice.endpointHex])
        _ = try alice.ok(["grants", "accept", "--label", "bob", "--addr", bob.address], stdin: bundle)
        #expect(try alice.run(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, "t"), "--files", "1", "--bytes", "1"]).exitCode == 69)
    }

    @Test func twoDevicesWithOneLabelAreRefusedAsAmbiguous() throws {
        let bob = LinkTestNode(), one = LinkTestNode(), two = LinkTestNode()
        _ = try bob.ok(["grants", "issue", "--to", one.endpointHex, "--label", "phone"])
        _ = try bob.ok(["grants", "issue", "--to", two.endpointHex, "--label", "phone"])
        let result = try bob.run(["block", "phone"])
        #expect(result.exitCode == 65)
        #expect(result.stderr.contains("several devices share that label"))
        #expect(try bob.scalar("SELECT count(*) FROM blocked_endpoints") == 0)
    }
}
