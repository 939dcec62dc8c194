import Chaos
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Runner
import Store

/// Leases on a PostgreSQL store, shared by processes on several hosts: one pass of a job at a time across hosts
/// (an advisory lock makes the read and the write of `acquire` one step), a holder on another host respected
/// until its lease expires, and per-pass shares for jobs whose passes split the work.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct PostgresLeaseTests {
    func migratedStore() throws -> String {
        let target = try PostgresCluster.shared().createDatabase(label: "lease")
        let catalog = Catalog(modules: [RunnerModule.module])
        try catalog.postgresMigrator.migrate(try Database(path: target.url), now: 0)
        return target.url
    }

    @Test func passesStartingTogetherOnEightHostsGetOneLeaseBetweenThem() throws {
        let url = try migratedStore()
        let acquired = Mutex(0)
        let failures = Mutex<[String]>([])
        let threads = (0..<8).map { host in
            Thread {
                do {
                    let db = try Database(path: url)
                    let lease = Lease(database: db, job: "send-wakeups", holder: "host\(host).example:100:1")
                    let result = try db.write { _ in try lease.acquire(now: 1_000, ttlMilliseconds: 60_000) }
                    if case .acquired = result { acquired.withLock { $0 += 1 } }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        threads.forEach { $0.start() }
        while threads.contains(where: { !$0.isFinished }) { usleep(10_000) }
        #expect(failures.withLock { $0 } == [])
        #expect(acquired.withLock { $0 } == 1)
    }

    @Test func aHolderOnAnotherHostIsRespectedUntilItsLeaseExpiresThenTakenOver() throws {
        let db = try Database(path: try migratedStore())
        let first = Lease(database: db, job: "clean-tokens", holder: "relay-a.example:4242:99")
        let second = Lease(database: db, job: "clean-tokens", holder: "relay-b.example:4242:99")
        #expect(try db.write { _ in try first.acquire(now: 0, ttlMilliseconds: 600_000) } == .acquired(tookOverAbandoned: false))
        #expect(try db.write { _ in try second.acquire(now: 599_999, ttlMilliseconds: 600_000) } == .heldByAnother)
        #expect(try db.write { _ in try second.acquire(now: 600_000, ttlMilliseconds: 600_000) } == .acquired(tookOverAbandoned: true))
        #expect(try db.scalar("SELECT holder FROM job_leases WHERE job = 'clean-tokens'") as String? == "relay-b.example:4242:99")
    }

    @Test func sharedPassesEachHoldTheirOwnLeaseAndAnExpiredShareIsTakenOverWithItsLedgerRow() throws {
        let db = try Database(path: try migratedStore())
        let a = Lease.shared(database: db, job: "send-wakeups", holder: "relay-a.example:1:1")
        let b = Lease.shared(database: db, job: "send-wakeups", holder: "relay-b.example:2:2")
        #expect(try db.write { _ in try a.acquire(now: 1_000, ttlMilliseconds: 60_000) } == .acquired(tookOverAbandoned: false))
        _ = try db.write { _ in try Ledger(database: db).begin(job: "send-wakeups", startedAt: 1_000) }
        #expect(try db.write { _ in try b.acquire(now: 2_000, ttlMilliseconds: 60_000) } == .acquired(tookOverAbandoned: false))
        _ = try db.write { _ in try Ledger(database: db).begin(job: "send-wakeups", startedAt: 2_000) }
        #expect(try Lease.running(database: db, now: 3_000)["send-wakeups"] == 1_000)

        // A third pass after a's lease expired (its host went away): a's share and ledger row are taken over, b's stay.
        let c = Lease.shared(database: db, job: "send-wakeups", holder: "relay-c.example:3:3")
        let abandoned = try db.write { _ in try c.takeOverAbandonedShares(of: "send-wakeups", now: 61_500) }
        #expect(abandoned == [1_000])
        #expect(try db.write { _ in try Ledger(database: db).abandonRunning(job: "send-wakeups", startedAt: 1_000, finishedAt: 61_500) } == 1)
        let outcomes = try db.query("SELECT started_at, outcome, reason FROM job_runs ORDER BY started_at").map {
            "\(try $0.get(0, as: Int64.self)) \(try $0.get(1, as: String.self)) \(try $0.get(2, as: String?.self) ?? "-")"
        }
        #expect(outcomes == ["1000 failed killed", "2000 running -"])
        #expect(try db.scalar("SELECT count(*) FROM job_leases") as Int? == 1)
    }
}

/// The runner's own work on a PostgreSQL store: migrations started together on several hosts, `maintain-store`
/// and the failure text of an unexpected store error.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct PostgresRunnerTests {
    @Test func migrationsStartedTogetherOnEightConnectionsApplyOnceAndAllSucceed() throws {
        let url = try PostgresCluster.shared().createDatabase(label: "migrate").url
        let catalog = Catalog(modules: [RunnerModule.module])
        let applied = Mutex<[[String]]>([])
        let failures = Mutex<[String]>([])
        let threads = (0..<8).map { _ in
            Thread {
                do {
                    let names = try catalog.postgresMigrator.migrate(try Database(path: url), now: 1)
                    applied.withLock { $0.append(names) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        threads.forEach { $0.start() }
        while threads.contains(where: { !$0.isFinished }) { usleep(10_000) }
        #expect(failures.withLock { $0 } == [])
        #expect(applied.withLock { $0.filter { !$0.isEmpty } } == [catalog.postgresMigrator.migrations.map(\.name)])
        #expect(try Database(path: url).scalar("SELECT count(*) FROM schema_migrations") as Int? == catalog.postgresMigrator.migrations.count)
    }

    @Test func maintainStorePrunesTheLedgerPastItsRetentionAndVacuumsEveryTable() throws {
        let url = try PostgresCluster.shared().createDatabase(label: "maintain").url
        let h = InProcessJob(modules: [RunnerModule.module])
        h.storePath = url
        let db = try h.database()
        let day: Int64 = 86_400_000, now: Int64 = 1_790_000_000_000
        try db.write { db in
            for startedAt in [now - 40 * day, now - 31 * day, now - day] {
                try Ledger(database: db).record(job: "clean-tokens", startedAt: startedAt, outcome: .completed, exitCode: .success, reason: nil)
            }
        }
        let (report, _) = try h.pass("maintain-store", now: Date(unixMilliseconds: now))
        #expect(report.exitCode == .success)
        #expect(report.result.counts["pruned_runs"] == 2)
        #expect(report.result.counts["vacuumed_tables"] == 5)
        #expect(try db.scalar("SELECT count(*) FROM job_runs WHERE job = 'clean-tokens'") as Int? == 1)
    }

    @Test func anUnexpectedPostgreSQLErrorNamesItsSQLState() {
        let failure = StoreFailure.jobError(for: StoreError(postgresState: "22P02", message: "invalid input syntax"))
        #expect(failure.exitCode == .software)
        #expect(failure.message == "store error 22P02: invalid input syntax")
    }
}
