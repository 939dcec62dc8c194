import Cryptography
import Foundation
import Grants
import Runner
import Store

/// `pull-offers` under SIGKILL: two real nodes — Alice serving the link (`job serve-link`, QUIC) and
/// holding offers for Bob, Bob pulling them — and Bob's pass killed at random moments and rerun. Each held
/// offer must reach Bob exactly once in effect: one incoming-offer row and one notification row per offer,
/// every offer of Alice's marked delivered, no offer Bob was not sent.
///
/// The model is the list of offer ids seeded on Alice's side. Pulled offers meet Bob's receiver limits like live
/// ones, so Bob's limits are raised to their maximum and each rerun runs one hour and one second later on the
/// pass clock (past the 5-minute pull interval and the offers-per-hour window). Beyond 10,000 held offers
/// (`--rows` above 100,000) the pending limit would refuse the rest, and the scenario would not settle.
package final class PullOffersChaos: ChaosScenario {
    package let job = "pull-offers"
    let alice: ChaosStore
    let bob: ChaosStore
    let process: ChaosProcess
    let held: Int
    let history: Int
    let seed: UInt64
    let now0: Int64 = 1_780_000_000
    private var offerIDs: [String] = []
    private var server: Process?
    private var passes = 0

    /// `held` offers waiting for Bob, on top of `history` already delivered ones (store realism).
    package init(directory: String, process: ChaosProcess, held: Int, history: Int, seed: UInt64) {
        alice = ChaosStore(directory: directory + "/alice")
        bob = ChaosStore(directory: directory + "/bob")
        try? FileManager.default.createDirectory(atPath: alice.directory, withIntermediateDirectories: true)
        try? FileManager.default.createDirectory(atPath: bob.directory, withIntermediateDirectories: true)
        self.process = process
        self.held = held
        self.history = history
        self.seed = seed
    }

    package var storePath: String { bob.store }

    private func run(_ store: String, _ arguments: [String], stdin: String? = nil) throws -> String {
        let outcome = try process.run(["--store", store, "--now", "@\(now0)"] + arguments, stdin: stdin)
        guard outcome.exitCode == 0 else { throw ChaosFailure("job \(arguments.joined(separator: " ")) failed: \(outcome.stderr)") }
        return outcome.stdout
    }

    private func endpoint(_ store: String) throws -> String {
        let text = try run(store, ["--json", "node", "show"])
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], let hex = object["endpoint_id"] as? String else {
            throw ChaosFailure("node show gave no endpoint")
        }
        return hex
    }

    package func prepare() throws {
        _ = try alice.createTemplate(process)
        _ = try bob.createTemplate(process)
        let (a, b) = (try endpoint(alice.template), try endpoint(bob.template))
        // Bob holds Alice's grant (he pulls from her); Alice knows Bob as a contact (she holds offers for him).
        let forBob = try run(alice.template, ["grants", "issue", "--to", b])
        _ = try run(bob.template, ["grants", "accept", "--label", "alice", "--addr", "127.0.0.1:1"], stdin: forBob)
        let forAlice = try run(bob.template, ["grants", "issue", "--to", a])
        _ = try run(alice.template, ["grants", "accept", "--label", "bob", "--addr", "127.0.0.1:1"], stdin: forAlice)
        _ = try run(bob.template, ["settings", "set", "limits.max-pending-offers", "10000"])
        _ = try run(bob.template, ["settings", "set", "limits.offers-per-hour", "1000"])

        let db = try Database(path: alice.template)
        let vault = Vault(keyring: try StoreKeyring(storeKey: try alice.templateKey()))
        let outgoing = OutgoingOffers(database: db, vault: vault)
        guard let contact: Int64 = try db.scalar("SELECT id FROM contacts") else { throw ChaosFailure("Alice has no contact") }
        var random = ChaosRandom(seed: seed ^ 0x0FFE)
        offerIDs = []
        try db.write { _ in
            for k in 0..<(history + held) {
                let id = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &random)) }.joined()
                let offer = OfferPayload(offerID: id, ticket: "syncthing-ticket-\(k)-" + String(repeating: "t", count: 64), senderName: "Alice",
                                         fileCount: Int64(k % 9 + 1), totalBytes: Int64(k) * 1000)
                try outgoing.record(offer, contactID: contact, state: k < history ? .delivered : .held, now: now0 * 1000 - 60_000)
                if k >= history { offerIDs.append(id) }
            }
        }
        try alice.sealTemplate(db)
        try bob.sealTemplate(try Database(path: bob.template))
    }

    package func beginRound(_ round: Int) throws {
        stopServer()
        try alice.freshCopy()
        try bob.freshCopy()
        passes = 0
        // Alice serves the link on a free port; Bob's contact points there.
        let server = Process()
        server.executableURL = URL(fileURLWithPath: process.executable)
        server.arguments = ["--store", alice.store, "--now", "@\(now0)", "serve-link", "--listen", "127.0.0.1:0", "--idle-exit", "600"]
        server.environment = process.environment
        let out = alice.directory + "/serve-link.out"
        guard FileManager.default.createFile(atPath: out, contents: nil) else { throw ChaosFailure("cannot create \(out)") }
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        server.standardError = FileHandle.nullDevice
        try server.run()
        self.server = server
        let deadline = Date().addingTimeInterval(20)
        var port: Int?
        while port == nil && Date() < deadline && server.isRunning {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if let range = text.range(of: "listening on 127.0.0.1:") { port = text[range.upperBound...].split(separator: "\n").first.flatMap { Int($0) } }
            if port == nil { usleep(20_000) }
        }
        guard let port else { stopServer(); throw ChaosFailure("serve-link did not start") }
        try Database(path: bob.store).execute("UPDATE contacts SET last_known_addr = ?", ["127.0.0.1:\(port)"])
    }

    private func stopServer() {
        if let server, server.isRunning { kill(server.processIdentifier, SIGKILL); server.waitUntilExit() }
        server = nil
    }

    package func nextPassArguments(settling: Bool, random: inout ChaosRandom) -> [String] {
        defer { passes += 1 }
        return ["--store", bob.store, "--now", "@\(now0 + Int64(passes) * 3601)", "--json", "pull-offers", "--check-now"]
    }

    package func isSettled(counts: [String: Int]) -> Bool {
        ((try? Database(path: alice.store).scalar("SELECT count(*) FROM held_offers WHERE state = 'held'")) as Int??) == .some(.some(0))
    }

    package func violations() throws -> [String] {
        let b = try Database(path: bob.store)
        var violations = try ChaosStore.commonViolations(b)
        let a = try Database(path: alice.store)
        let stillHeld: Int = try a.scalar("SELECT count(*) FROM held_offers WHERE state = 'held'") ?? -1
        if stillHeld != 0 { violations.append("\(stillHeld) offer(s) still held by Alice") }
        let delivered: Int = try a.scalar("SELECT count(*) FROM held_offers WHERE state = 'delivered'") ?? -1
        if delivered != history + held { violations.append("Alice shows \(delivered) delivered offers, expected \(history + held)") }
        var received: [String: Int] = [:]
        try b.forEachRow("SELECT offer_id FROM incoming_offers") { received[try $0.get(0, as: String.self), default: 0] += 1 }
        let expected = Set(offerIDs)
        let missing = expected.filter { received[$0] == nil }.count
        let doubled = received.values.filter { $0 > 1 }.count
        let foreign = received.keys.filter { !expected.contains($0) }.count
        if missing > 0 { violations.append("\(missing) offer(s) never reached Bob") }
        if doubled > 0 { violations.append("\(doubled) offer(s) stored twice") }
        if foreign > 0 { violations.append("\(foreign) offer(s) Bob was never sent (the history must not be resent)") }
        let notified: Int = try b.scalar("SELECT count(*) FROM notifications") ?? -1
        let notifiedOffers: Int = try b.scalar("SELECT count(DISTINCT incoming_offer_id) FROM notifications") ?? -1
        if notified != held || notifiedOffers != held { violations.append("\(notified) notification rows for \(notifiedOffers) offers, expected one for each of \(held)") }
        return violations
    }

    package func finish() { stopServer() }
}
