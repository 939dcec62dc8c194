import Elapsed
import Foundation
import Testing
import TestSupport
@testable import Runner

/// The pass's timers read the injected monotonic clock: a test moves a `ManualClock` instead of sleeping.
@Suite(.timeLimit(.minutes(15))) struct MonotonicTimerTests {
    /// Runs one pass of `job` with `manual` as the pass's monotonic clock.
    func pass(_ job: ScriptedJob, clock manual: ManualClock) throws -> PassRunner.Report {
        let h = InProcessJob(modules: [RunnerModule.module, Module(name: "test", jobs: [job])])
        var invocation = h.invocation()
        invocation.monotonic = manual.clock
        let database = try invocation.openStore(h.catalog)
        let arguments = try Arguments(parsing: [], options: job.options + [OptionSpec.flag("--dry-run", "")], positionals: [], commandName: job.name)
        return PassRunner(catalog: h.catalog, invocation: invocation).pass(job, database: database, arguments: arguments, logger: invocation.logger(for: job.name))
    }

    @Test func theLeaseIsRenewedOnlyOnceAThirdOfItsTTLHasPassedOnTheMonotonicClock() throws {
        let manual = ManualClock()
        let seen = LockedBox<[Int64]>([])
        let job = ScriptedJob(name: "renew") { context in
            // The lease's expiry is set back so a renewal shows; 600 s TTL: renewed once 200 s have passed.
            func expiryAfterCheck() throws -> Int64 {
                try context.database.write { db in try db.execute("UPDATE job_leases SET expires_at = 1 WHERE job = 'renew'") }
                try context.checkCancellation()
                return try context.database.scalar("SELECT expires_at FROM job_leases WHERE job = 'renew'") ?? -1
            }
            var expiries = [try expiryAfterCheck()]
            manual.advance(by: 199)
            expiries.append(try expiryAfterCheck())
            manual.advance(by: 1)
            expiries.append(try expiryAfterCheck())
            expiries.append(try expiryAfterCheck())
            seen.set(expiries)
            return .completed([:])
        }
        let report = try pass(job, clock: manual)
        #expect(report.exitCode == .success)
        let expiries = seen.get()
        #expect(expiries.count == 4)
        #expect(expiries[0] == 1 && expiries[1] == 1, "no renewal before a third of the TTL")
        #expect(expiries[2] >= Date().unixMilliseconds + 590_000, "renewed to now + TTL")
        #expect(expiries[3] == 1, "the next renewal waits another third")
    }

    @Test func aPassDurationIsTheMonotonicTimeItsJobTook() throws {
        let manual = ManualClock()
        let job = ScriptedJob(name: "slow") { _ in
            manual.advance(by: 5.25)
            return .completed([:])
        }
        let report = try pass(job, clock: manual)
        #expect(report.durationMilliseconds == 5250)
    }

    @Test func progressShowsOnlyAfterItsDelayAndAtMostTwiceASecond() {
        let manual = ManualClock()
        let lines = LockedBox<[String]>([])
        let reporter = ProgressReporter(delay: 2, clock: manual.clock) { line in lines.set(lines.get() + [line]) }
        reporter.report(done: 10, total: 100)
        manual.advance(by: 1.9)
        reporter.report(done: 20, total: 100)
        #expect(lines.get().isEmpty)
        manual.advance(by: 0.1)
        reporter.report(done: 40, total: 100)
        #expect(lines.get() == ["\r40 / 100 rows, 20/s   "])
        manual.advance(by: 0.4)
        reporter.report(done: 50, total: 100)
        #expect(lines.get().count == 1)
        manual.advance(by: 0.1)
        reporter.report(done: 60, total: 100)
        #expect(lines.get().last == "\r60 / 100 rows, 24/s   ")
        reporter.finish()
        #expect(lines.get().last == "\n")
    }
}
