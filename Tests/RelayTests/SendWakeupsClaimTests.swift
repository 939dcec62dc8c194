import Chaos
import Cryptography
import Foundation
import Relay
import Store
import Testing
import TestSupport

/// A `send-wakeups` pass still pushing when the debounce window after its start has passed, on PostgreSQL (as on
/// several sender hosts): a second pass neither pushes the tokens the first still holds, nor does the first push a
/// token whose claim the second has since taken. Judged from what reached the APNs stand-in.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct SendWakeupsClaimTests {
    static let now: Int64 = 1_780_000_000_000
    static func token(_ i: Int) -> String { String(format: "%08x", i) + String(repeating: "5d", count: 28) }

    @Test func aPassStillPushingAfterTheWindowNeverPushesATokenAnotherPassAlsoPushes() throws {
        let devices = 1500
        let home = TemporaryDirectory("wakeup-claims")
        let standIn = try APNsStandInProcess(directory: home.path, answers: [:])
        defer { standIn.stop() }
        let target = try PostgresCluster.shared().createDatabase(label: "claims")
        try String(repeating: "4f", count: 32).write(toFile: home.file("store-key"), atomically: true, encoding: .utf8)
        chmod(home.file("store-key"), 0o600)
        let env = JobProcess.environment(home: home.path, standIn.environment.merging(["JOB_STORE_KEY_FILE": home.file("store-key")]) { $1 })
        let migrate = try JobProcess.run(["--store", target.url, "migrate"], environment: env)
        try #require(migrate.exitCode == 0, "\(migrate.stderr)")
        do {
            let db = try Database(path: target.url)
            try RegistrationSeeder.seed(database: db, storeKey: SecretBytes([UInt8](repeating: 0x4f, count: 32)), devices: devices, tokensPerDevice: 1,
                                        registeredAt: Self.now - 600_000, triggeredAt: Self.now - 60_000,
                                        deviceID: { String(format: "claims-device-%08d", $0) }, token: { i, _ in Self.token(i) }, result: { _, _ in .none })
        }
        func pass(_ offsetSeconds: Int64) -> [String] {
            ["--store", target.url, "--now", "@\(Self.now / 1000 + offsetSeconds)", "--json", "send-wakeups"]
        }
        func tokens(_ from: Int, _ to: Int? = nil) throws -> [String] {
            let all = try standIn.requests(since: 0).compactMap { $0["token"] as? String }
            return Array(all[from..<(to ?? all.count)])
        }

        // Pass A claims every token, hands its first 500 pushes to libcurl (as many streams as the connection takes
        // leave) and waits for their answers (held): stopped there, as a slow pass on a busy host would be.
        try standIn.holdAnswers(true)
        let first = try JobProcess.start(pass(0), environment: env)
        let deadline = Date().addingTimeInterval(60)
        var seen = 0
        repeat {
            usleep(300_000)
            let count = try tokens(0).count
            if count > 0 && count == seen { break }
            seen = count
        } while Date() < deadline
        first.signal(SIGSTOP)
        let stoppedAt = Date()
        let sentBeforeStop = try tokens(0).count
        try #require(sentBeforeStop > 0 && sentBeforeStop <= 500, "pass A stopped with its first streams sent (\(sentBeforeStop) sent)")
        try standIn.holdAnswers(false)

        // 31 s after A's start: A's claims still hold, so B pushes none of A's tokens.
        let second = try JobProcess.run(pass(31), environment: env, timeout: 120)
        #expect(second.exitCode == 0, "\(second.stdout) \(second.stderr)")
        let afterSecond = try tokens(0).count
        #expect(afterSecond == sentBeforeStop, "a pass 31 s after another's start pushed \(afterSecond - sentBeforeStop) of the tokens that pass still holds")

        // 46 s after: A's claims have ended (15 s) and the window after them passed; C takes the unanswered tokens.
        let third = try JobProcess.run(pass(46), environment: env, timeout: 120)
        #expect(third.exitCode == 0, "\(third.stdout) \(third.stderr)")
        let byThird = try Set(tokens(afterSecond))
        #expect(byThird.count > 0)

        // A goes on, after as long a real pause as C's clock claims (its pushes still waiting in libcurl for a
        // stream are then too late to leave): every claim it still meant to use was taken, so it sends none of them.
        let pause = 11 - Date().timeIntervalSince(stoppedAt)
        if pause > 0 { usleep(UInt32(pause * 1_000_000)) }
        first.signal(SIGCONT)
        let resumed = try first.wait(timeout: 120)
        #expect(resumed.exitCode == 0, "\(resumed.stdout) \(resumed.stderr)")
        let pushedAfterResume = try tokens(afterSecond + byThird.count)
        let pushedTwice = Set(pushedAfterResume).intersection(byThird).count
        #expect(pushedTwice == 0, "token(s) pushed by the resumed pass after another pass took them")
        let counts = try #require(resumed.jsonObject()["counts"] as? [String: Any])
        #expect((counts["claims_lost"] as? Int ?? 0) == devices - 500, "claims the resumed pass gave up: \(counts)")

        // Every token was pushed; none twice by passes that both held it.
        let everything = try tokens(0)
        let allPushed = Set(everything) == Set((0..<devices).map(Self.token))
        #expect(allPushed, "every token pushed")
        let unsentByA = Set((0..<devices).map(Self.token)).subtracting(try tokens(0, sentBeforeStop))
        let pushesOfUnsent = everything.filter { unsentByA.contains($0) }
        #expect(pushesOfUnsent.count == unsentByA.count, "the tokens A held but had not sent were pushed \(pushesOfUnsent.count) times for \(unsentByA.count)")
    }
}
