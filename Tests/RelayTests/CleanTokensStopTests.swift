import Foundation
import Relay
import Runner
import Store
import Testing
import TestSupport

/// A `clean-tokens` pass stopped by SIGTERM part-way reports the batches it committed, through the built `job`.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct CleanTokensStopTests {
    let home = TemporaryDirectory("clean-stop")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    /// Seeds `devices` devices with two removable tokens each; returns how many tokens the store holds.
    func seed(devices: Int) throws -> Int {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        let key = try StoreKeyLocation.resolve(environment: [:], storePath: store).load()
        let db = try Database(path: store)
        try RegistrationSeeder.seed(database: db, storeKey: key, devices: devices, tokensPerDevice: 2, registeredAt: 1_000_000, triggeredAt: nil,
                                    deviceID: { "stop-device-\($0)" }, token: { i, j in String(format: "%08x%02x", i, j) + String(repeating: "5a", count: 27) },
                                    result: { _, _ in .badDeviceToken })
        return try db.scalar("SELECT count(*) FROM relay_tokens") ?? 0
    }

    @Test func aStoppedPassReportsTheTokensItRemovedInTheJSONTheLedgerAndTheMetrics() throws {
        let before = try seed(devices: 40_000)
        let running = try JobProcess.start(["--store", store, "--json", "--metrics-dir", home.path, "clean-tokens"], environment: env)
        // Stop it once some batches have committed, well before the last.
        let watcher = try Database(path: store)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, running.process.isRunning, (try watcher.scalar("SELECT count(*) FROM relay_tokens") ?? before) > before - 3_000 { usleep(2_000) }
        running.signal(SIGTERM)
        let result = try running.wait()
        let after: Int = try watcher.scalar("SELECT count(*) FROM relay_tokens") ?? 0
        try #require(result.exitCode == 75, "stopped part-way (a faster machine may need more tokens): \(result.exitCode) \(result.stderr)")
        #expect(after > 0 && after < before, "some batches committed, not all")
        let object = try result.jsonObject()
        let counts = try #require(object["counts"] as? [String: Any], "\(object)")
        #expect(counts["removed"] as? Int == before - after, "\(counts)")
        #expect((counts["devices_removed"] as? Int ?? 0) > 0, "\(counts)")
        let ledger: String = try watcher.scalar("SELECT counts FROM job_runs WHERE job = 'clean-tokens' ORDER BY id DESC LIMIT 1") ?? ""
        #expect(ledger.contains("\"removed\":\(before - after)"), "\(ledger)")
        let metrics = try String(contentsOfFile: home.file("clean-tokens.prom"), encoding: .utf8)
        #expect(metrics.contains("removed") && metrics.contains("\(before - after)"), "\(metrics)")
    }
}
