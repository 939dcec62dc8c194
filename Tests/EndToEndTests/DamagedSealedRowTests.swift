import Foundation
import Store
import Testing
import TestSupport

/// A damaged sealed row is that row's failure: pull-offers counts it and carries on with the other contacts.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct DamagedSealedRowTests {
    let home = TemporaryDirectory("sealed")

    func node(_ name: String) -> (store: String, env: [String: String]) {
        (home.file("\(name).sqlite"), JobProcess.environment(home: home.path))
    }

    func ok(_ node: (store: String, env: [String: String]), _ arguments: [String], stdin: String? = nil) throws -> String {
        let result = try JobProcess.run(["--store", node.store] + arguments, environment: node.env, stdin: stdin)
        guard result.exitCode == 0 else { throw TestFailure("\(arguments.prefix(2)) exited \(result.exitCode): \(result.stderr)") }
        return result.stdout
    }

    func endpoint(_ node: (store: String, env: [String: String])) throws -> String {
        let shown = try JSONSerialization.jsonObject(with: Data(try ok(node, ["node", "show", "--json"]).utf8)) as? [String: Any]
        return try #require(shown?["endpoint_id"] as? String)
    }

    @Test func pullOffersCountsADamagedContactOrGrantRowAndDialsTheOthersWithAMessageThatDoesNotBlameTheKey() throws {
        let alice = node("alice")
        let aliceEndpoint = try endpoint(alice)
        for name in ["bob", "carol", "dave"] {
            let peer = node(name)
            _ = try ok(alice, ["grants", "issue", "--to", try endpoint(peer)])
            let bundle = try ok(peer, ["grants", "issue", "--to", aliceEndpoint])
            _ = try ok(alice, ["grants", "accept", "--label", name, "--addr", "127.0.0.1:1"], stdin: bundle)
        }
        let db = try Database(path: alice.store)
        try db.execute("UPDATE grants_held SET secret_sealed = randomblob(60) WHERE contact_id = (SELECT id FROM contacts WHERE local_label = 'carol')")
        try db.execute("UPDATE contacts SET endpoint_sealed = randomblob(60) WHERE local_label = 'dave'")

        let pass = try JobProcess.run(["--store", alice.store, "pull-offers", "--check-now", "--json"], environment: alice.env)
        #expect(pass.exitCode == 0, "\(pass.stderr)")
        let counts = try #require(try pass.jsonObject()["counts"] as? [String: Any])
        #expect(counts["damaged"] as? Int == 2)
        #expect(counts["unreachable"] as? Int == 1, "bob was still dialled")
        #expect(pass.stderr.contains("event=pull.rows_damaged"))
        #expect(!pass.stderr.lowercased().contains("key"), "\(pass.stderr)")

        // A command that needs the damaged row itself names the damage, not the key.
        let list = try JobProcess.run(["--store", alice.store, "contacts", "list"], environment: alice.env)
        #expect(list.exitCode == 65, "\(list.stderr)")
        #expect(list.stderr.contains("a sealed row in the store is damaged"), "\(list.stderr)")
        #expect(!list.stderr.contains("replaced"))
    }
}
