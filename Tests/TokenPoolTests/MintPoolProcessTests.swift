import Foundation
import Store
import Testing
import TestSupport
@testable import TokenPool

/// `job mint-pool` and friends as real processes: exit codes, a pass killed mid-mint, and what reaches stderr.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct MintPoolProcessTests {
    final class Machine {
        let home = TemporaryDirectory("pool-home")
        var store: String { home.file("store.sqlite") }
        var extra: [String: String] = [:]

        func run(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 120) throws -> JobProcess.Result {
            try JobProcess.run(["--store", store] + arguments, environment: JobProcess.environment(home: home.path, extra), stdin: stdin, timeout: timeout)
        }

        func exportedTokens() throws -> [String] {
            let result = try run(["--json", "pool", "export"])
            return try result.jsonObject()["tokens"] as? [String] ?? []
        }
    }

    @Test func withoutAnIdentityMintPoolRecordsSkippedNoIdentityAndExits0() throws {
        let machine = Machine()
        let result = try machine.run(["--json", "mint-pool"])
        #expect(result.exitCode == 0)
        #expect(try result.jsonObject()["outcome"] as? String == "skipped")
        #expect(try result.jsonObject()["reason"] as? String == "no-identity")
    }

    @Test func aPasskeyIdentityMakesMintPoolSkipAsUnsupportedIdentityAndExit0() throws {
        let machine = Machine()
        #expect(try machine.run(["identity", "add-peer", "did:peer:0z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"]).exitCode == 0)
        let result = try machine.run(["--json", "mint-pool"])
        #expect(result.exitCode == 0)
        #expect(try result.jsonObject()["outcome"] as? String == "skipped")
        #expect(try result.jsonObject()["reason"] as? String == "unsupported-identity")
        #expect(!result.stderr.contains("did:peer:0z6Mk"))
        // By hand the pass still says why.
        let human = try machine.run(["mint-pool"])
        #expect(human.exitCode == 0)
        #expect((human.stdout + human.stderr).contains("unsupported-identity"))
        #expect(try machine.exportedTokens().isEmpty)
    }

    @Test func signingOutWithUseNoneDropsThePoolAndMintPoolThenSkips() throws {
        let machine = Machine()
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyA).exitCode == 0)
        #expect(try machine.run(["settings", "set", "pool.size", "10"]).exitCode == 0)
        #expect(try machine.run(["--now", "2027-05-01T08:00:00Z", "mint-pool"]).exitCode == 0)
        #expect(try machine.exportedTokens().count == 10)

        #expect(try machine.run(["identity", "use"]).exitCode == 64)
        #expect(try machine.run(["identity", "use", "--none", PoolHarness.didA]).exitCode == 64)
        let out = try machine.run(["--json", "identity", "use", "--none"])
        #expect(out.exitCode == 0)
        #expect(try out.jsonObject()["dropped_slots"] as? Int == 10)
        let slots: Int? = try Database(path: machine.store).scalar("SELECT count(*) FROM token_pool_slots")
        #expect(slots == 0)
        let list = try machine.run(["--json", "identity", "list"])
        #expect(list.stdout.contains("\"active\":false") && !list.stdout.contains("\"active\":true"))

        let next = try machine.run(["--json", "--now", "2027-05-02T00:15:00Z", "mint-pool"])
        #expect(next.exitCode == 0)
        #expect(try next.jsonObject()["reason"] as? String == "no-identity")
        #expect(try machine.exportedTokens().isEmpty)
        // The key is still stored: choosing it again signs back in.
        #expect(try machine.run(["identity", "use", PoolHarness.didA]).exitCode == 0)
        #expect(try machine.run(["--now", "2027-05-02T00:15:00Z", "mint-pool"]).exitCode == 0)
        #expect(try machine.exportedTokens().count == 10)
    }

    @Test func identityRemoveDeletesTheSealedKeyAndItsPoolAndRefusesTheActiveOneWithoutForce() throws {
        let machine = Machine()
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyA).exitCode == 0)
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyB).exitCode == 0)
        #expect(try machine.run(["settings", "set", "pool.size", "10"]).exitCode == 0)
        #expect(try machine.run(["--now", "2027-05-01T08:00:00Z", "mint-pool"]).exitCode == 0)

        // The active one needs --force; nothing changes without it.
        let refused = try machine.run(["--json", "identity", "remove", PoolHarness.didA])
        #expect(refused.exitCode == 65)
        #expect(refused.stderr.contains("add --force"))
        #expect(try machine.exportedTokens().count == 10)
        #expect(try machine.run(["identity", "remove", "did:ethr:0x1111111111111111111111111111111111111111"]).exitCode == 65)

        // A non-active one goes (matched in any case) without touching the pool.
        #expect(try machine.run(["identity", "remove", PoolHarness.didB.lowercased()]).exitCode == 0)
        #expect(try machine.exportedTokens().count == 10)

        let forced = try machine.run(["--json", "identity", "remove", "--force", PoolHarness.didA])
        #expect(forced.exitCode == 0)
        #expect(try forced.jsonObject()["dropped_slots"] as? Int == 10)
        let db = try Database(path: machine.store)
        let identities: Int? = try db.scalar("SELECT count(*) FROM token_pool_identities")
        let rows: Int? = try db.scalar("SELECT (SELECT count(*) FROM token_pool_slots) + (SELECT count(*) FROM token_pool_generations)")
        #expect(identities == 0 && rows == 0)
        #expect(try machine.run(["identity", "export"]).exitCode == 78)
        let next = try machine.run(["--json", "--now", "2027-05-02T00:15:00Z", "mint-pool"])
        #expect(try next.jsonObject()["reason"] as? String == "no-identity")
    }

    @Test func identityUseMatchesADidEthrInAnyLetterCase() throws {
        let machine = Machine()
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyA).exitCode == 0)
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyB).exitCode == 0)
        let used = try machine.run(["--json", "identity", "use", PoolHarness.didB.lowercased()])
        #expect(used.exitCode == 0)
        #expect(try used.jsonObject()["did"] as? String == PoolHarness.didB)
        #expect(try used.jsonObject()["changed"] as? Bool == true)
        #expect(try machine.run(["--json", "identity", "use", PoolHarness.didB.uppercased().replacingOccurrences(of: "DID:ETHR:0X", with: "did:ethr:0x")]).jsonObject()["changed"] as? Bool == false)
    }

    @Test func aPassKilledMidMintLeavesTheOldPoolIntactAndARerunCompletesTheNewOne() throws {
        let machine = Machine()
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyA).exitCode == 0)
        #expect(try machine.run(["settings", "set", "pool.size", "100"]).exitCode == 0)
        #expect(try machine.run(["--now", "2027-05-01T08:00:00Z", "mint-pool"]).exitCode == 0)
        let oldTokens = try machine.exportedTokens()
        #expect(oldTokens.count == 100)

        #expect(try machine.run(["settings", "set", "pool.size", "20000"]).exitCode == 0)
        let running = try JobProcess.start(["--store", machine.store, "--now", "2027-05-09T08:00:00Z", "mint-pool"],
                                           environment: JobProcess.environment(home: machine.home.path))
        // Kill it once some staged rows of the new pool are committed, well before the last of 20 batches.
        let observer = try Database(path: machine.store)
        let deadline = Date().addingTimeInterval(60)
        var staged = 0
        while Date() < deadline && running.process.isRunning {
            staged = (try? observer.scalar("""
                SELECT count(*) FROM token_pool_slots s JOIN token_pool_generations g ON g.id = s.generation_id WHERE g.state = 'staging'
                """) as Int?).flatMap { $0 } ?? 0
            if staged >= 1000 { break }
            usleep(2_000)
        }
        running.signal(SIGKILL)
        let killed = try running.wait()
        #expect(killed.exitCode == 128 + SIGKILL, "the pass finished before it could be killed")
        #expect(staged >= 1000 && staged < 20000)

        // The fetcher still sees the whole old pool, byte for byte.
        #expect(try machine.exportedTokens() == oldTokens)
        let show = try machine.run(["--json", "--now", "2027-05-09T08:00:00Z", "pool", "show"])
        let pool = try #require(try show.jsonObject()["pool"] as? [String: Any])
        #expect(pool["size"] as? Int == 100)
        #expect(pool["first_date"] as? String == "2027-05-01")
        #expect(try machine.run(["--now", "2027-05-09T08:00:00Z", "pool", "verify"]).exitCode == 0)

        // A rerun purges the abandoned staging rows and installs the complete new pool.
        let rerun = try machine.run(["--json", "--now", "2027-05-09T08:00:00Z", "mint-pool"])
        #expect(rerun.exitCode == 0, "\(rerun.stderr)")
        let counts = try #require(try rerun.jsonObject()["counts"] as? [String: Any])
        #expect(counts["minted"] as? Int == 20000)
        #expect(counts["replaced"] as? Int == 100)
        #expect((counts["purged"] as? Int ?? 0) >= 100 + staged)
        let newTokens = try machine.exportedTokens()
        #expect(newTokens.count == 20000)
        #expect(Set(newTokens).count == 20000)
        let rows: Int? = try observer.scalar("SELECT count(*) FROM token_pool_slots")
        #expect(rows == 20000)
        let generations: Int? = try observer.scalar("SELECT count(*) FROM token_pool_generations")
        #expect(generations == 1)
        let first = PoolCalendar.day(year: 2027, month: 5, day: 9)
        let today = try DayTokenInspection(token: newTokens[Int(first % 20000)], expectedIssuer: PoolHarness.didA)
        #expect(today.notBefore == first * 86_400 - 300)
    }

    @Test func aRerunOnTheSameInstantReachesTheSameEndState() throws {
        let machine = Machine()
        #expect(try machine.run(["identity", "import"], stdin: PoolHarness.keyA).exitCode == 0)
        #expect(try machine.run(["--now", "2027-05-01T08:00:00Z", "mint-pool"]).exitCode == 0)
        let first = try machine.exportedTokens()
        #expect(try machine.run(["--now", "2027-05-01T08:00:00Z", "mint-pool"]).exitCode == 0)
        // ES256K is deterministic: the same key, payloads and iat give the same 100 tokens.
        #expect(try machine.exportedTokens() == first)
        #expect(Set(first).count == 100)
        // --dry-run reports and changes nothing.
        let dry = try machine.run(["--json", "--now", "2027-06-01T08:00:00Z", "mint-pool", "--dry-run"])
        #expect(try (dry.jsonObject()["counts"] as? [String: Any])?["would_mint"] as? Int == 100)
        #expect(try machine.exportedTokens() == first)
    }

    @Test func noIdentifierOrSecretReachesStderrOrTheStoreInClear() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        let now = instant("2027-07-20T11:00:00Z")
        try endorser.configure(now: Int64(now.timeIntervalSince1970))
        let urlCanary = "canary-url-7f3a9c"
        let planCanary = "https://endorser.ch/entity/canary-plan-51d2"
        let machine = Machine()
        machine.extra = ["ENDORSER_URL": endorser.baseURL + "/" + urlCanary]
        var stderr = ""
        var stdout = ""
        func run(_ arguments: [String], stdin: String? = nil) throws -> JobProcess.Result {
            let result = try machine.run(["--now", "2027-07-20T11:00:00Z"] + arguments, stdin: stdin)
            stderr += result.stderr
            stdout += result.stdout
            return result
        }
        for format in ["text", "json"] {
            _ = try run(["--log-format", format, "identity", "import"], stdin: PoolHarness.keyA)
            _ = try run(["--log-format", format, "settings", "set", "prefetch.plan-ids", planCanary])
            _ = try run(["--log-format", format, "settings", "set", "prefetch.after-id", PoolHarness.afterID])
            #expect(try run(["--log-format", format, "mint-pool"]).exitCode == 0)
            _ = try run(["--log-format", format, "pool", "show"])
            #expect(try run(["--log-format", format, "pool", "verify"]).exitCode == 0)
            #expect(try run(["--log-format", format, "prefetch"]).exitCode == 0)
            _ = try run(["--log-format", format, "prefetch", "--dry-run"])
            _ = try run(["--log-format", format, "status"])
            // Failure paths: a refused credential and a server error.
            try endorser.configure(now: Int64(now.timeIntervalSince1970) + 5 * 86_400)
            #expect(try run(["--log-format", format, "prefetch"]).exitCode == 65)
            try endorser.configure(now: Int64(now.timeIntervalSince1970), status: 502)
            #expect(try run(["--log-format", format, "prefetch"]).exitCode == 75)
            try endorser.configure(now: Int64(now.timeIntervalSince1970), status: nil)
            _ = try run(["--log-format", format, "identity", "use", "did:ethr:0x0000000000000000000000000000000000000001"])
            _ = try run(["--log-format", format, "identity", "export"])
            _ = try run(["--log-format", format, "pool", "clear"])
        }
        let tokens = try machine.exportedTokens() // empty after the clear; collect the ones printed earlier instead
        #expect(tokens.isEmpty)
        #expect(try endorser.requests().contains { ($0["path"] as? String)?.contains(urlCanary) == true })

        let didA = PoolHarness.didA
        for canary in [didA, didA.lowercased(), String(didA.dropFirst("did:ethr:".count)).lowercased(), PoolHarness.keyA,
                       urlCanary, "canary-plan-51d2", PoolHarness.afterID, "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NksifQ", "127.0.0.1"] {
            #expect(!stderr.lowercased().contains(canary.lowercased()), "stderr carries \(canary)")
        }
        // The store file holds neither the key nor any token in clear.
        let file = String(decoding: try Data(contentsOf: URL(fileURLWithPath: machine.store)), as: UTF8.self)
        #expect(!file.contains(PoolHarness.keyA))
        #expect(!file.contains("eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NksifQ"))
        // stdout did carry the DID (identity import prints it) and the exported key, as asked.
        #expect(stdout.contains(didA))
    }
}
