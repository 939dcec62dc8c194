import Cryptography
import Foundation
import Runner
import Store
import Testing
import TestSupport
@testable import TokenPool

/// Pool tokens are sealed bound to their identity, pool generation, slot and day. Attacked
/// through the real store file (rows swapped with the `sqlite3` shell) and the real `job` binary.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct SealedSlotBindingTests {
    static let now = "2027-09-14T06:30:00Z"
    static let nowSeconds: Int64 = 1_820_903_400

    final class Machine {
        let home = TemporaryDirectory("pool-binding")
        var store: String { home.file("store.sqlite") }
        let endorser: EndorserStandIn

        init() throws {
            endorser = try EndorserStandIn()
            try endorser.configure(now: SealedSlotBindingTests.nowSeconds)
        }

        func run(_ arguments: [String], stdin: String? = nil) throws -> JobProcess.Result {
            try JobProcess.run(["--store", store, "--now", SealedSlotBindingTests.now] + arguments,
                               environment: JobProcess.environment(home: home.path, ["ENDORSER_URL": endorser.baseURL]), stdin: stdin)
        }

        /// Identity A, a 10-day pool minted now, the prefetch settings.
        func mint() throws {
            for (arguments, stdin) in [(["identity", "import"], PoolHarness.keyA), (["settings", "set", "pool.size", "10"], nil),
                                       (["settings", "set", "prefetch.after-id", PoolHarness.afterID], nil), (["mint-pool"], nil)] as [([String], String?)] {
                let result = try run(arguments, stdin: stdin)
                guard result.exitCode == 0 else { throw TestFailure("\(arguments) failed: \(result.stderr)") }
            }
        }

        /// Runs SQL on the store file with the sqlite3 shell (the attacker's tool).
        func sqlite(_ sql: String) throws {
            let result = try ExternalTool.run("/usr/bin/sqlite3", [store, sql])
            guard result.status == 0 else { throw TestFailure("sqlite3 failed: \(result.output)") }
        }
    }

    var today: Int { Int(Self.nowSeconds / 86_400 % 10) }

    @Test func aSealedTokenMovedToAnotherSlotNeverReachesEndorser() throws {
        let m = try Machine()
        defer { m.endorser.stop() }
        try m.mint()
        #expect(try m.run(["prefetch"]).exitCode == 0)
        let before = try m.endorser.requests().count
        #expect(before == 1)

        // Swap today's and tomorrow's sealed tokens in the live pool.
        let tomorrow = (today + 1) % 10
        try m.sqlite("""
            CREATE TEMP TABLE moved AS SELECT slot, sealed_token FROM token_pool_slots WHERE slot IN (\(today), \(tomorrow));
            UPDATE token_pool_slots SET sealed_token = (SELECT sealed_token FROM moved WHERE moved.slot =
                CASE token_pool_slots.slot WHEN \(today) THEN \(tomorrow) ELSE \(today) END)
            WHERE slot IN (\(today), \(tomorrow));
            """)
        let prefetch = try m.run(["--json", "prefetch"])
        #expect(prefetch.exitCode == 65, "\(prefetch.stdout) \(prefetch.stderr)")
        let error = try prefetch.jsonObject()["error"] as? [String: Any]
        #expect(error?["category"] as? String == "pool-unreadable")
        #expect(prefetch.stderr.contains("the live pool is damaged: a sealed token does not open in its slot"))
        #expect(try m.endorser.requests().count == before, "no token, right or wrong, was sent")

        // pool verify names the two damaged slots; export prints nothing.
        let verify = try m.run(["pool", "verify"])
        #expect(verify.exitCode == 65)
        let failing = verify.stdout.split(separator: "\n").filter { $0.contains("FAIL: the sealed token does not open in this slot") }
        #expect(failing.count == 2 && failing.contains { $0.contains("slot \(today):") } && failing.contains { $0.contains("slot \(tomorrow):") }, "\(verify.stdout)")
        let export = try m.run(["pool", "export"])
        #expect(export.exitCode == 65 && export.stdout.isEmpty)

        // The next mint-pool replaces the damaged pool; prefetch works again.
        #expect(try m.run(["mint-pool"]).exitCode == 0)
        #expect(try m.run(["prefetch"]).exitCode == 0)
        #expect(try m.endorser.requests().allSatisfy { $0["verdict"] as? String == "ok" })
    }

    @Test func aTokenMovedFromAnotherPoolGenerationDoesNotOpen() throws {
        let m = try Machine()
        defer { m.endorser.stop() }
        try m.mint()
        // Keep today's sealed token of this pool, mint a new pool, and put the old row's token into the new pool's slot.
        try m.sqlite("CREATE TABLE kept AS SELECT slot, sealed_token FROM token_pool_slots WHERE slot = \(today)")
        #expect(try m.run(["mint-pool"]).exitCode == 0)
        try m.sqlite("UPDATE token_pool_slots SET sealed_token = (SELECT sealed_token FROM kept) WHERE slot = \(today); DROP TABLE kept;")
        let prefetch = try m.run(["prefetch"])
        #expect(prefetch.exitCode == 65 && prefetch.stderr.contains("the live pool is damaged"))
        #expect(try m.endorser.requests().isEmpty)
    }

    @Test func aPoolSealedWithoutSlotBindingIsRefusedUntilTheNextMintReplacesIt() throws {
        let m = try Machine()
        defer { m.endorser.stop() }
        try m.mint()
        // What a store minted by the previous version holds: tokens sealed for the column only, no seal context.
        let db = try Database(path: m.store)
        let keyring = try StoreKeyring(storeKey: try StoreKeyLocation.resolve(environment: [:], storePath: m.store).load())
        let pool = PoolStore(database: db)
        let live = try #require(try pool.live())
        try db.write { db in
            for record in try pool.slots(of: live.generationID) {
                let token = try PoolSealing.open(record, of: live, keyring: keyring)
                _ = try db.execute("UPDATE token_pool_slots SET sealed_token = ? WHERE generation_id = ? AND slot = ?",
                                   [try keyring.seal(Array(token.utf8), purpose: PoolStore.tokenPurpose), live.generationID, record.slot])
            }
            _ = try db.execute("UPDATE token_pool_generations SET seal_context = NULL WHERE id = ?", [live.generationID])
        }

        let prefetch = try m.run(["--json", "prefetch"])
        #expect(prefetch.exitCode == 65)
        #expect((try prefetch.jsonObject()["error"] as? [String: Any])?["category"] as? String == "pool-legacy")
        #expect(prefetch.stderr.contains("sealed by an older version without binding each token to its slot"))
        #expect(try m.endorser.requests().isEmpty)
        let export = try m.run(["pool", "export"])
        #expect(export.exitCode == 65 && export.stdout.isEmpty)
        let verify = try m.run(["pool", "verify"])
        #expect(verify.exitCode == 65 && verify.stdout.contains("pool: the pool was sealed by an older version"), "\(verify.stdout)")

        #expect(try m.run(["mint-pool"]).exitCode == 0)
        #expect(try m.run(["prefetch"]).exitCode == 0)
        #expect(try m.endorser.requests().count == 1)
    }
}
