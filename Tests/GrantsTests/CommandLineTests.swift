import Foundation
@testable import Grants
import Testing
import TestSupport

/// The commands through the real binary: bad input refused with the documented exit code and nothing stored,
/// settings honoured, and no identifier or secret in any log line or error message.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct CommandLineTests {
    @Test func badBundlesAddressesAndEndpointsAreRefusedWithNothingStored() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), carol = LinkTestNode()
        let bundle = try alice.ok(["grants", "issue", "--to", bob.endpointHex])
        #expect(try bob.run(["grants", "accept", "--label", "a", "--addr", "127.0.0.1:1"], stdin: "vnidrop-grant-v1.nonsense").exitCode == 65)
        var fields = bundle.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").map(String.init)
        fields[4] = String(fields[4].dropLast(2))
        #expect(try bob.run(["grants", "accept", "--label", "a", "--addr", "127.0.0.1:1"], stdin: fields.joined(separator: ".")).exitCode == 65, "a short secret")
        let other = try carol.run(["grants", "accept", "--label", "a", "--addr", "127.0.0.1:1"], stdin: bundle)
        #expect(other.exitCode == 65 && other.stderr.contains("issued to another device"))
        #expect(try bob.run(["grants", "accept", "--label", "a", "--addr", "no-port"], stdin: bundle).exitCode == 64)
        #expect(try bob.run(["grants", "accept", "--label", "a", "--addr", "host:99999"], stdin: bundle).exitCode == 64)
        #expect(try bob.run(["grants", "accept", "--addr", "127.0.0.1:1"], stdin: bundle).exitCode == 64)
        #expect(try bob.run(["grants", "accept", "--label", "", "--addr", "127.0.0.1:1"], stdin: bundle).exitCode == 64)
        #expect(try bob.scalar("SELECT count(*) FROM contacts") == 0 && bob.scalar("SELECT count(*) FROM grants_held") == 0)
        #expect(try carol.scalar("SELECT count(*) FROM contacts") == 0)

        #expect(try alice.run(["grants", "issue", "--to", "abc"]).exitCode == 64)
        #expect(try alice.run(["grants", "issue", "--to", bob.endpointHex, "--lifetime", "7d"]).exitCode == 64)
        #expect(try alice.run(["grants", "issue", "--to", alice.endpointHex]).exitCode == 64)
        // Not an endpoint id, and no known device has that label: refused, nothing blocked.
        #expect(try alice.run(["block", "not-an-endpoint"]).exitCode == 65)
        #expect(try alice.scalar("SELECT count(*) FROM blocked_endpoints") == 0)
        #expect(try alice.scalar("SELECT count(*) FROM grants_issued") == 1)

        try bob.ok(["grants", "accept", "--label", "alice", "--addr", "127.0.0.1:1"], stdin: bundle)
        try bob.ok(["grants", "accept", "--label", "alice", "--addr", "127.0.0.1:1"], stdin: bundle)
        #expect(try bob.scalar("SELECT count(*) FROM grants_held") == 1, "accepting the same bundle twice keeps one grant")
    }

    @Test func theLifetimeComesFromTheSettingUnlessGivenAndListingsNeverShowSecrets() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        let now = 1_780_000_000
        try alice.ok(["settings", "set", "grants.lifetime", "30d"])
        #expect(try alice.run(["settings", "set", "grants.lifetime", "45d"]).exitCode == 64)
        let issued = try alice.json(["grants", "issue", "--to", bob.endpointHex], now: "@\(now)")
        #expect(issued["lifetime"] as? String == "30d")
        #expect(issued["expires_at"] as? String == Date(timeIntervalSince1970: TimeInterval(now + 30 * 86_400)).rfc3339)
        let forever = try alice.json(["grants", "issue", "--to", bob.endpointHex, "--lifetime", "never"], now: "@\(now)")
        #expect(forever["expires_at"] is NSNull)
        let bundle = try #require(issued["bundle"] as? String)
        let secret = bundle.split(separator: ".")[4]
        let listing = try alice.ok(["--json", "grants", "list"]) + alice.ok(["grants", "list"])
        #expect(!listing.contains(String(secret)))
        #expect(listing.contains(String(bundle.split(separator: ".")[3])), "the grant id is listed; the secret is not")
    }

    @Test func aTicketFileThatIsMissingEmptyOrTooLargeIsRefused() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.ok(["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: try bob.ok(["grants", "issue", "--to", alice.endpointHex]))
        let empty = ticketFile(alice, "")
        let big = ticketFile(alice, String(repeating: "x", count: 9000))
        for file in [alice.home.file("missing"), empty, big] {
            let result = try alice.run(["offers", "send", "--to", "bob", "--ticket-file", file, "--files", "1", "--bytes", "1"])
            #expect(result.exitCode == 65, "\(result.stderr)")
        }
        #expect(try alice.run(["offers", "send", "--to", "bob", "--ticket-file", empty, "--files", "-1", "--bytes", "1"]).exitCode == 64)
        #expect(try alice.run(["offers", "send", "--to", "nobody", "--ticket-file", ticketFile(alice, "t"), "--files", "1", "--bytes", "1"]).exitCode == 65)
        #expect(try alice.run(["offers", "accept", "00112233445566778899aabbccddeeff"]).exitCode == 65)
        #expect(try alice.run(["offers", "decline", "xyz"]).exitCode == 64)
        #expect(try alice.scalar("SELECT count(*) FROM held_offers") == 0)
    }

    @Test func sweepGrantsDryRunReportsCountsAndChangesNothing() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        let now = 1_780_000_000
        for _ in 0..<3 { try alice.ok(["grants", "issue", "--to", bob.endpointHex, "--lifetime", "30d"], now: "@\(now)") }
        let later = "@\(now + 31 * 86_400)"
        let dry = try alice.json(["sweep-grants", "--dry-run"], now: later)
        #expect((dry["counts"] as? [String: Int])?["lapsed"] == 3)
        #expect(try alice.scalar("SELECT count(*) FROM grants_issued WHERE revoked_at IS NULL") == 3)
        let real = try alice.json(["sweep-grants"], now: later)
        #expect((real["counts"] as? [String: Int])?["lapsed"] == 3)
        let listing = try alice.json(["grants", "list"], now: later)
        #expect((listing["issued"] as? [[String: Any]])?.allSatisfy { $0["state"] as? String == "expired" } == true)
    }

    @Test func contactsRenameDeleteAllAndTheFingerprint() throws {
        let alice = LinkTestNode(), bob = LinkTestNode(), carol = LinkTestNode()
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        try pair(issuer: carol, holder: alice, label: "carol", address: "127.0.0.1:1")
        try alice.ok(["grants", "issue", "--to", bob.endpointHex])
        try alice.ok(["contacts", "rename", "bob", "Bob B."])
        #expect(try alice.run(["contacts", "rename", "nobody", "x"]).exitCode == 65)
        let shown = try alice.json(["node", "show"])
        #expect((shown["fingerprint"] as? String)?.count == 19)
        #expect(try alice.ok(["contacts", "list"]).contains("Bob B."))
        let deleted = try alice.json(["contacts", "delete-all"])
        #expect(deleted["deleted"] as? Int == 2)
        #expect(try alice.scalar("SELECT count(*) FROM contacts") + alice.scalar("SELECT count(*) FROM grants_held") == 0)
        #expect(try alice.scalar("SELECT count(*) FROM grants_issued WHERE revoked_at IS NULL") == 0, "every issued grant is revoked")
    }

    @Test func noLogLineOrErrorMessageCarriesAnIdentifierASecretATicketOrAnAddress() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try alice.startServer(); try bob.startServer()
        try pair(issuer: bob, holder: alice, label: "CANARY-LABEL-BOB")
        try pair(issuer: alice, holder: bob, label: "CANARY-LABEL-ALICE")
        let sent = try alice.json(["offers", "send", "--to", "CANARY-LABEL-BOB", "--ticket-file", ticketFile(alice, "CANARY-TICKET-LIVE"),
                                   "--files", "1", "--bytes", "1", "--name", "CANARY-NAME"])
        let offerID = try #require(sent["offer_id"] as? String)
        try bob.ok(["offers", "decline", offerID])
        let bobPort = bob.port
        try bob.stopServer()
        _ = try alice.json(["offers", "send", "--to", bob.endpointHex, "--ticket-file", ticketFile(alice, "CANARY-TICKET-HELD"), "--files", "1", "--bytes", "1"])
        _ = try bob.json(["pull-offers", "--check-now"])
        try alice.ok(["grants", "revoke", "--peer", bob.endpointHex])
        _ = try bob.run(["offers", "send", "--to", "CANARY-LABEL-ALICE", "--ticket-file", ticketFile(bob, "CANARY-TICKET-BOB"), "--files", "1", "--bytes", "1"])
        _ = try bob.run(["grants", "accept", "--label", "x", "--addr", "127.0.0.1:1"], stdin: "CANARY-BUNDLE")
        _ = try bob.run(["offers", "accept", "ffffffffffffffffffffffffffffffff"])
        try alice.stopServer()

        let grantIDs = try (alice.json(["grants", "list"])["issued"] as? [[String: Any]] ?? []).compactMap { $0["grant_id"] as? String }
        let output = alice.stderrSeen + bob.stderrSeen
        #expect(output.contains("event="), "the logs were captured")
        var canaries = ["CANARY", alice.endpointHex, bob.endpointHex, offerID, "127.0.0.1", ":\(alice.port)", ":\(bobPort)",
                        alice.endpoint.fingerprint, bob.endpoint.fingerprint] + grantIDs
        canaries.append(contentsOf: grantIDs.map { String($0.prefix(16)) })
        for canary in canaries {
            #expect(!output.contains(canary), "stderr leaked \(canary.prefix(12))…")
        }
    }
}
