import Chaos
import Cryptography
import Foundation
import Relay
import Store
import Testing
import TestSupport

/// `send-wakeups` passes started at once on one PostgreSQL store (as on several sender hosts) split the due Device
/// IDs: every token is pushed once, every Device ID is claimed by exactly one pass, every answer recorded.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct ConcurrentSendWakeupsTests {
    static let now: Int64 = 1_780_000_000_000
    static func token(_ i: Int) -> String { String(format: "%08x", i) + String(repeating: "7c", count: 28) }

    @Test func passesStartedAtOnceOnPostgreSQLPushEveryTokenOnceAndClaimEveryDeviceIDOnce() throws {
        let devices = 3000, passes = 3
        let home = TemporaryDirectory("concurrent-wakeups")
        let standIn = try APNsStandInProcess(directory: home.path, answers: [:])
        defer { standIn.stop() }
        let target = try PostgresCluster.shared().createDatabase(label: "wakeups")
        try String(repeating: "3e", count: 32).write(toFile: home.file("store-key"), atomically: true, encoding: .utf8)
        chmod(home.file("store-key"), 0o600)
        let env = JobProcess.environment(home: home.path, standIn.environment.merging(["JOB_STORE_KEY_FILE": home.file("store-key")]) { $1 })
        let migrate = try JobProcess.run(["--store", target.url, "migrate"], environment: env)
        try #require(migrate.exitCode == 0, "\(migrate.stderr)")
        do {
            let db = try Database(path: target.url)
            try RegistrationSeeder.seed(database: db, storeKey: SecretBytes([UInt8](repeating: 0x3e, count: 32)), devices: devices, tokensPerDevice: 1,
                                        registeredAt: Self.now - 600_000, triggeredAt: Self.now - 60_000,
                                        deviceID: { String(format: "concurrent-device-%08d", $0) }, token: { i, _ in Self.token(i) }, result: { _, _ in .none })
        }

        let running = try (0..<passes).map { _ in
            try JobProcess.start(["--store", target.url, "--now", "@\(Self.now / 1000)", "--json", "send-wakeups"], environment: env)
        }
        let results = try running.map { try $0.wait(timeout: 120) }
        var claimed = 0, delivered = 0
        for result in results {
            #expect(result.exitCode == 0, "\(result.stdout) \(result.stderr)")
            let counts = try #require(result.jsonObject()["counts"] as? [String: Any])
            claimed += (counts["devices"] as? Int) ?? 0
            delivered += (counts["delivered"] as? Int) ?? 0
        }
        #expect(claimed == devices, "Device IDs claimed by the passes together")
        #expect(delivered == devices)

        let requests = try standIn.requests(since: 0)
        let tokens = requests.compactMap { $0["token"] as? String }
        #expect(tokens.count == devices && Set(tokens) == Set((0..<devices).map(Self.token)), "every token pushed exactly once")
        #expect(requests.allSatisfy { $0["status"] as? Int == 200 && $0["violation"] is NSNull })

        let db = try Database(path: target.url)
        let recorded: Int = try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200 AND result_at = ? AND sent_at = ?", [Self.now, Self.now]) ?? 0
        let consumed: Int = try db.scalar("SELECT count(*) FROM relay_devices WHERE last_push_at = ?", [Self.now]) ?? 0
        #expect(recorded == devices && consumed == devices)
    }
}
