import Foundation
import Store
import Testing
import TestSupport

/// Real processes contending for one store: leases, SIGKILL, SIGTERM, eight at once.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct LeaseAndSignalTests {
    let home = TemporaryDirectory("e2e")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    @Test func aSecondPassStartedWhileTheFirstRunsIsSkippedAndExits0() throws {
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 100_000, batchSize: 20)
        let first = try JobProcess.start(["--store", store, "maintain-store", "--json"], environment: env)
        // Wait until the first pass holds the lease, then start the second.
        #expect(try StoreSeeding.waitUntil(timeout: 20) { try Database(path: store).scalar("SELECT count(*) FROM job_leases") as Int? == 1 })
        let second = try JobProcess.run(["--store", store, "maintain-store", "--json"], environment: env)
        #expect(second.exitCode == 0)
        #expect(try second.jsonObject()["outcome"] as? String == "skipped")
        #expect(try second.jsonObject()["reason"] as? String == "lease-held")
        let firstResult = try first.wait(timeout: 120)
        #expect(firstResult.exitCode == 0, "\(firstResult.stderr)")
        #expect(try firstResult.jsonObject()["outcome"] as? String == "completed")
        #expect(try StoreSeeding.seededRows(at: store) == 0)
    }

    @Test func aPassKilledWithSIGKILLDoesNotBlockTheNextIsRecordedKilledAndTheRerunFinishesTheWork() throws {
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 100_000, batchSize: 50)
        let victim = try JobProcess.start(["--store", store, "maintain-store"], environment: env)
        #expect(try StoreSeeding.waitUntil(timeout: 20) { try StoreSeeding.seededRows(at: store) < 100_000 })
        victim.signal(SIGKILL)
        _ = try victim.wait(timeout: 10)
        let left = try StoreSeeding.seededRows(at: store)
        #expect(left > 0 && left % 50 == 0, "a killed pass loses or doubles nothing: whole batches only")
        let started = Date()
        let rerun = try JobProcess.run(["--store", store, "maintain-store", "--json"], environment: env, timeout: 120)
        #expect(rerun.exitCode == 0, "\(rerun.stderr)")
        #expect(try rerun.jsonObject()["outcome"] as? String == "completed", "the dead holder's lease is taken over at once, not after the TTL")
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(try StoreSeeding.seededRows(at: store) == 0)
        let db = try Database(path: store)
        #expect(try db.scalar("SELECT count(*) FROM job_runs WHERE job = 'maintain-store' AND reason = 'killed' AND exit_code IS NULL") as Int? == 1)
        #expect(try db.scalar("SELECT count(*) FROM job_runs WHERE outcome = 'running'") as Int? == 0)
    }

    @Test func sigtermEndsTheCurrentBatchReleasesTheLeaseAndExits75() throws {
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 100_000, batchSize: 50)
        let pass = try JobProcess.start(["--store", store, "maintain-store", "--json"], environment: env)
        #expect(try StoreSeeding.waitUntil(timeout: 20) { try StoreSeeding.seededRows(at: store) < 100_000 })
        pass.signal(SIGTERM)
        let result = try pass.wait(timeout: 30)
        #expect(result.exitCode == 75, "\(result.stderr)")
        let object = try result.jsonObject()
        #expect(object["outcome"] as? String == "failed")
        #expect((object["error"] as? [String: Any])?["category"] as? String == "cancelled")
        let db = try Database(path: store)
        #expect(try db.scalar("SELECT count(*) FROM job_leases") as Int? == 0)
        let run = try #require(try db.queryOne("SELECT outcome, exit_code, reason FROM job_runs WHERE job = 'maintain-store'"))
        #expect(try run.get(0, as: String.self) == "failed")
        #expect(try run.get(1, as: Int.self) == 75)
        #expect(try run.get(2, as: String.self) == "cancelled")
        let left = try StoreSeeding.seededRows(at: store)
        #expect(left > 0 && left % 50 == 0)
        #expect((object["counts"] as? [String: Int])?["pruned_runs"] == 100_000 - left, "the committed batches are reported")
    }

    @Test func eightConcurrentPassesOnOneStoreDoTheWorkOnceAndTheOthersSkip() throws {
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 60_000, batchSize: 20)
        // Hold the write lock while all eight start, so they contend for the lease at the same moment
        // however slowly this machine spawns processes.
        let gate = try Database(path: store)
        try gate.execute("BEGIN IMMEDIATE")
        let passes = try (0..<8).map { _ in try JobProcess.start(["--store", store, "maintain-store", "--json"], environment: env) }
        usleep(500_000)
        try gate.execute("COMMIT")
        let results = try passes.map { try $0.wait(timeout: 180) }
        for result in results {
            #expect(result.exitCode == 0, "\(result.stderr)")
            #expect(!result.stderr.contains("SQLITE_BUSY") && !result.stderr.contains("locked"))
        }
        let outcomes = try results.map { try $0.jsonObject()["outcome"] as? String }
        #expect(outcomes.filter { $0 == "completed" }.count == 1, "\(outcomes)")
        #expect(outcomes.filter { $0 == "skipped" }.count == 7, "\(outcomes)")
        let pruned = try results.compactMap { try ($0.jsonObject()["counts"] as? [String: Int])?["pruned_runs"] }
        #expect(pruned == [60_000])
        #expect(try StoreSeeding.seededRows(at: store) == 0)
    }

    @Test func twoProcessesMigratingAFreshStoreTogetherApplyEachMigrationOnce() throws {
        let passes = try (0..<2).map { _ in try JobProcess.start(["--store", store, "migrate", "--json"], environment: env) }
        let results = try passes.map { try $0.wait(timeout: 60) }
        #expect(results.allSatisfy { $0.exitCode == 0 }, "\(results.map(\.stderr))")
        let applied = try results.map { (try $0.jsonObject()["applied"] as? [String])?.count ?? -1 }
        let db = try Database(path: store)
        let known: Int = try db.scalar("SELECT count(*) FROM schema_migrations") ?? 0
        #expect(applied.sorted() == [0, known], "one process applied everything, the other found nothing to do")
    }
}
