import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Runner

/// A job whose behaviour each test chooses.
struct ScriptedJob: Job {
    let name: String
    let summary = "a scripted test job"
    let schedule = Schedule.every(minutes: 15)
    let body: @Sendable (JobContext) throws -> JobResult
    func run(_ context: JobContext) throws -> JobResult { try body(context) }
}

@Suite(.timeLimit(.minutes(15))) struct PassRunnerTests {
    func harness(_ job: ScriptedJob) -> InProcessJob {
        InProcessJob(modules: [RunnerModule.module, Module(name: "test", jobs: [job])])
    }

    @Test func aCompletedPassIsRecordedInTheLedgerWithItsCounts() throws {
        let h = harness(ScriptedJob(name: "count") { _ in .completed(["seen": 3, "done": 2]) })
        let (report, output) = try h.pass("count")
        #expect(report.exitCode == .success)
        #expect(output.hasPrefix("count: completed in "))
        #expect(output.contains("seen=3 done=2"))
        let run = try #require(try Ledger(database: h.database()).latestRuns().first { $0.job == "count" })
        #expect(run.outcome == "completed")
        #expect(run.exitCode == 0)
        #expect(run.countsJSON == #"{"seen":3,"done":2}"#)
        #expect(run.finishedAt != nil)
    }

    @Test func aFailingPassRecordsItsCategoryAndExitCodeAndReleasesTheLease() throws {
        let h = harness(ScriptedJob(name: "fail") { _ in throw JobError.unavailable("relay-down", "the relay is unavailable") })
        let (report, _) = try h.pass("fail", json: true)
        #expect(report.exitCode == .unavailable)
        let db = try h.database()
        let run = try #require(try Ledger(database: db).latestRuns().first { $0.job == "fail" })
        #expect(run.outcome == "failed")
        #expect(run.exitCode == 69)
        #expect(run.reason == "relay-down")
        #expect(try db.scalar("SELECT count(*) FROM job_leases") as Int? == 0)
    }

    @Test func anUnexpectedErrorIsAnInternalFailureWithExit70() throws {
        struct Oops: Error {}
        let h = harness(ScriptedJob(name: "oops") { _ in throw Oops() })
        #expect(try h.pass("oops").report.exitCode == .software)
    }

    @Test func aPassStartedWhileAnotherHoldsTheLeaseIsSkippedWithExit0() throws {
        let h = harness(ScriptedJob(name: "held") { _ in .completed(["work": 1]) })
        let db = try h.database()
        // A holder on another host: only its expiry can free the lease.
        try db.write { db in
            try db.execute("INSERT INTO job_leases (job, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)",
                           ["held", "other-host:1:1", Date().unixMilliseconds, Date().unixMilliseconds + 600_000])
        }
        let (report, output) = try h.pass("held", json: true)
        #expect(report.exitCode == .success)
        #expect(report.result.outcome == .skipped)
        #expect(report.result.reason == "lease-held")
        #expect(output.contains(#""outcome":"skipped""#))
        let run = try #require(try Ledger(database: db).latestRuns().first { $0.job == "held" })
        #expect(run.outcome == "skipped")
        #expect(run.reason == "lease-held")
    }

    @Test func anExpiredLeaseFromAnotherHostIsTakenOverAndItsRunningRowRecordedKilledWithNoExitCode() throws {
        let h = harness(ScriptedJob(name: "stale") { _ in .completed([:]) })
        let db = try h.database()
        let past = Date().unixMilliseconds - 1000
        try db.write { db in
            try db.execute("INSERT INTO job_leases (job, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)", ["stale", "other-host:1:1", past - 600_000, past])
            try db.execute("INSERT INTO job_runs (job, started_at, outcome) VALUES ('stale', ?, 'running')", [past - 600_000])
        }
        let (report, _) = try h.pass("stale")
        #expect(report.result.outcome == .completed)
        let runs = try Ledger(database: db).runs(job: "stale")
        #expect(runs.map(\.outcome) == ["completed", "failed"])
        #expect(runs.last?.reason == "killed")
        #expect(runs.last?.exitCode == nil, "a killed pass returned no exit code; 70 would claim an internal error")
    }

    @Test func aLeaseHeldByADeadProcessOnThisHostIsTakenOverAtOnce() throws {
        let h = harness(ScriptedJob(name: "dead") { _ in .completed([:]) })
        let db = try h.database()
        // Linux never hands out a pid equal to /proc/sys/kernel/pid_max (pids wrap below it), so no process has it.
        let pidMax = try #require(Int32(try String(contentsOfFile: "/proc/sys/kernel/pid_max", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(kill(pidMax, 0) == -1 && errno == ESRCH, "the chosen pid must not exist for this test to mean anything")
        let deadHolder = "\(Lease.hostName()):\(pidMax):12345"
        try db.write { db in
            try db.execute("INSERT INTO job_leases (job, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)",
                           ["dead", deadHolder, Date().unixMilliseconds, Date().unixMilliseconds + 600_000])
        }
        #expect(try h.pass("dead").report.result.outcome == .completed)
    }

    @Test func aDryRunTakesNoLeaseAndWritesNoLedgerRow() throws {
        let h = harness(ScriptedJob(name: "dry") { context in
            #expect(context.dryRun)
            return .completed(["would": 5])
        })
        let (report, output) = try h.pass("dry", ["--dry-run"])
        #expect(report.exitCode == .success)
        #expect(output.contains("dry run, nothing changed"))
        let db = try h.database()
        #expect(try db.scalar("SELECT count(*) FROM job_runs") as Int? == 0)
        #expect(try db.scalar("SELECT count(*) FROM job_leases") as Int? == 0)
    }

    @Test func theJobReadsTheInjectedClockNotTheSystemClock() throws {
        let seen = SeenDate()
        let h = harness(ScriptedJob(name: "clock") { context in seen.value = context.now; return .completed([:]) })
        let emulated = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        _ = try h.pass("clock", now: emulated)
        #expect(seen.value == emulated)
    }

    @Test func jsonResultCarriesTheDocumentedFields() throws {
        let h = harness(ScriptedJob(name: "shape") { _ in .completed(["a": 1]) })
        let (_, output) = try h.pass("shape", json: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        for key in ["job", "outcome", "started_at", "duration_ms", "counts"] { #expect(object[key] != nil, "missing \(key)") }
        #expect((object["counts"] as? [String: Int]) == ["a": 1])
    }

    @Test func metricsAreWrittenAtomicallyForTheTextfileCollector() throws {
        let h = harness(ScriptedJob(name: "metered") { _ in .completed(["pushed": 7]) })
        let metrics = h.directory.file("metrics")
        let output = BufferedOutput()
        let invocation = h.invocation(output: output, metricsDirectory: metrics)
        let db = try invocation.openStore(h.catalog)
        _ = PassRunner(catalog: h.catalog, invocation: invocation).pass(h.catalog.job(named: "metered")!, database: db, arguments: Arguments(), logger: invocation.logger(for: "metered"))
        let text = try String(contentsOfFile: metrics + "/metered.prom", encoding: .utf8)
        #expect(text.contains("background_job_last_run_timestamp_seconds{job_name=\"metered\"} "))
        #expect(text.contains("background_job_last_success_timestamp_seconds{job_name=\"metered\"} "))
        #expect(text.contains("background_job_duration_seconds{job_name=\"metered\"} "))
        #expect(text.contains("background_job_last_exit_code{job_name=\"metered\"} 0"))
        #expect(text.contains("background_job_items{job_name=\"metered\",kind=\"pushed\"} 7"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: metrics) == ["metered.prom"])
    }

    @Test func aFailedPassKeepsTheLastSuccessTimestampFromTheLedger() throws {
        let flag = SeenDate()
        let h = harness(ScriptedJob(name: "flaky") { _ in
            if flag.value == nil { flag.value = Date(); return .completed([:]) }
            throw JobError.transient("flaky", "try again")
        })
        let metrics = h.directory.file("metrics")
        let invocation = h.invocation(metricsDirectory: metrics)
        let db = try invocation.openStore(h.catalog)
        let runner = PassRunner(catalog: h.catalog, invocation: invocation)
        _ = runner.pass(h.catalog.job(named: "flaky")!, database: db, arguments: Arguments(), logger: invocation.logger(for: "flaky"))
        _ = runner.pass(h.catalog.job(named: "flaky")!, database: db, arguments: Arguments(), logger: invocation.logger(for: "flaky"))
        let text = try String(contentsOfFile: metrics + "/flaky.prom", encoding: .utf8)
        #expect(text.contains("background_job_last_exit_code{job_name=\"flaky\"} 75"))
        // The value is the first (successful) pass's finish time from the ledger, not the failed pass's.
        let runs = try Ledger(database: db).runs(job: "flaky")
        #expect(Set(runs.map(\.outcome)) == ["completed", "failed"])
        let succeeded = try #require(runs.first { $0.outcome == "completed" }?.finishedAt)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("background_job_last_success_timestamp_seconds{job_name=\"flaky\"} ") })
        let value = try #require(Double(line.split(separator: " ").last.map(String.init) ?? ""))
        #expect(abs(value - Double(succeeded) / 1_000) < 0.002, "last success \(value) is not the completed pass's finish \(succeeded) ms")
    }

    @Test func logLinesAreLogfmtWithFixedEventNames() throws {
        let h = harness(ScriptedJob(name: "logs") { context in
            context.logger.info("thing.done", ["items": 3, "kind": "fixed-word"])
            return .completed(["items": 3])
        })
        _ = try h.pass("logs")
        let line = try #require(h.logs.first { $0.contains("event=thing.done") })
        #expect(line.hasPrefix("ts="))
        #expect(line.contains(" level=info job=logs event=thing.done items=3 kind=fixed-word"))
        #expect(h.logs.contains { $0.contains("event=pass.completed duration_ms=") && $0.hasSuffix(" items=3\n") })
    }
}

final class SeenDate: Sendable {
    private let date = Mutex<Date?>(nil)
    var value: Date? {
        get { date.withLock { $0 } }
        set { date.withLock { $0 = newValue } }
    }
}
