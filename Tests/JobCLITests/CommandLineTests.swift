import Foundation
import Testing
import TestSupport
@testable import JobCLI
@testable import Runner

/// Every error path of the command line exits with its documented code and a message a person can act on.
@Suite(.timeLimit(.minutes(15))) struct CommandLineTests {
    let directory = TemporaryDirectory("cli")

    struct Outcome {
        let code: ExitCode
        let stdout: String
        let stderr: String
    }

    func run(_ arguments: [String], environment: [String: String]? = nil) -> Outcome {
        let output = BufferedOutput()
        let errors = BufferedOutput()
        let app = CommandLineApp(catalog: Catalog(modules: [RunnerModule.module]))
        let env = environment ?? ["HOME": directory.path]
        let code = app.run(arguments: arguments, environment: env, output: output, errorOutput: { errors.write($0) })
        return Outcome(code: code, stdout: output.text, stderr: errors.text)
    }

    var store: String { directory.file("s.sqlite") }

    @Test func noCommandIsAUsageError() {
        let result = run([])
        #expect(result.code == .usage)
        #expect(result.stderr.hasPrefix("job: no command given\nUsage: job "))
    }

    @Test func anUnknownCommandSuggestsTheClosestJob() {
        let result = run(["--store", store, "maintain-stor"])
        #expect(result.code == .usage)
        #expect(result.stderr.hasPrefix("job: unknown command 'maintain-stor'; did you mean maintain-store?\n"))
    }

    @Test func anUnknownOptionOfAJobIsAUsageError() {
        let result = run(["--store", store, "maintain-store", "--fast"])
        #expect(result.code == .usage)
        #expect(result.stderr.contains("unknown option --fast for 'maintain-store'"))
    }

    @Test func aGlobalOptionWithoutItsValueIsAUsageError() {
        let result = run(["maintain-store", "--store"])
        #expect(result.code == .usage)
        #expect(result.stderr.hasPrefix("job: option --store needs a value\n"))
    }

    @Test func aBadNowIsAUsageErrorThatShowsTheAcceptedForms() {
        let result = run(["--store", store, "--now", "yesterday", "maintain-store"])
        #expect(result.code == .usage)
        #expect(result.stderr.contains("RFC 3339"))
        #expect(!FileManager.default.fileExists(atPath: store), "nothing is created on a usage error")
    }

    @Test func aBadJobNowFromTheEnvironmentIsAlsoAUsageError() {
        #expect(run(["--store", store, "maintain-store"], environment: ["HOME": directory.path, "JOB_NOW": "soon"]).code == .usage)
    }

    @Test func aBadLogFormatIsAUsageError() {
        #expect(run(["--store", store, "--log-format", "xml", "list"]).code == .usage)
    }

    @Test func aBadJobLogFormatFromTheEnvironmentIsAConfigurationErrorLikeJobLogLevel() {
        let result = run(["--store", store, "list"], environment: ["HOME": directory.path, "JOB_LOG_FORMAT": "xml"])
        #expect(result.code == .configuration)
        #expect(result.stderr == "job: JOB_LOG_FORMAT must be text or json\n")
    }

    @Test func aBadLogLevelIsAConfigurationError() {
        let result = run(["--store", store, "list"], environment: ["HOME": directory.path, "JOB_LOG_LEVEL": "loud"])
        #expect(result.code == .configuration)
        #expect(result.stderr == "job: JOB_LOG_LEVEL must be debug, info, warn or error\n")
    }

    @Test func aStoreThatIsNotADatabaseExits73AndIsLeftUntouched() throws {
        try Data("not a database at all, just text".utf8).write(to: URL(fileURLWithPath: store))
        for command in [["maintain-store"], ["status"], ["migrate"], ["settings", "list"]] {
            let result = run(["--store", store] + command)
            #expect(result.code == .cannotCreate, "\(command)")
            #expect(result.stderr.contains("not an SQLite database"), "\(command)")
        }
        #expect(try String(contentsOfFile: store, encoding: .utf8) == "not a database at all, just text")
    }

    @Test func aStoreFromANewerVersionExits73() throws {
        #expect(run(["--store", store, "migrate"]).code == .success)
        let db = try Database(path: store)
        try db.write { db in try db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES ('zz-999-from-the-future', 1)") }
        let result = run(["--store", store, "maintain-store"])
        #expect(result.code == .cannotCreate)
        #expect(result.stderr.contains("newer version of job"))
    }

    @Test func aStoreInAFolderThatCannotBeCreatedExits73() throws {
        let blocker = directory.file("file")
        try Data().write(to: URL(fileURLWithPath: blocker))
        let result = run(["--store", blocker + "/sub/s.sqlite", "migrate"])
        #expect(result.code == .cannotCreate)
        #expect(result.stderr.hasPrefix("job: "))
    }

    @Test func anUnknownSettingSuggestsTheClosestKey() {
        let result = run(["--store", store, "settings", "set", "runs.retention-day", "3"])
        #expect(result.code == .usage)
        #expect(result.stderr.contains("did you mean runs.retention-days?"))
    }

    @Test func anOutOfRangeSettingIsRefusedAndNotStored() {
        let result = run(["--store", store, "settings", "set", "runs.retention-days", "0"])
        #expect(result.code == .usage)
        #expect(result.stderr.contains("must be a whole number from 1 to 3650"))
        #expect(run(["--store", store, "settings", "get", "runs.retention-days"]).stdout == "30\n")
    }

    @Test func aCommandGroupWithoutASubcommandListsItsSubcommands() {
        let result = run(["--store", store, "settings"])
        #expect(result.code == .usage)
        #expect(result.stderr.contains("'settings' needs one of: list, get, set, unset"))
    }

    @Test func helpWorksForEveryCommandWithoutTouchingTheStore() {
        for words in [["help"], ["help", "maintain-store"], ["maintain-store", "--help"], ["help", "settings", "set"], ["--help"], ["help", "status"]] {
            let result = run(["--store", store] + words)
            #expect(result.code == .success, "\(words)")
            #expect(result.stdout.contains("job"), "\(words)")
        }
        #expect(!FileManager.default.fileExists(atPath: store))
        #expect(run(["help", "nonsense"]).code == .usage)
    }

    @Test func listJSONIsOneArrayWithNamesSummariesAndSchedules() throws {
        let result = run(["--store", store, "list", "--json"])
        let jobs = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let job = try #require(jobs.first { $0["name"] as? String == "maintain-store" })
        #expect(job["summary"] is String)
        #expect((job["schedule"] as? [String: Any])?["on_calendar"] as? String == "*-*-* 03:30:00 UTC")
    }

    @Test func maintainStorePrunesOnlyLedgerRowsOlderThanTheRetention() throws {
        #expect(run(["--store", store, "migrate"]).code == .success)
        let db = try Database(path: store)
        let day: Int64 = 86_400_000
        let now: Int64 = 1_800_000_000_000
        try db.write { db in
            for age in [40, 31, 29, 1] {
                try db.execute("INSERT INTO job_runs (job, started_at, finished_at, outcome, exit_code, counts) VALUES ('old', ?, ?, 'completed', 0, '{}')", [now - Int64(age) * day, now - Int64(age) * day])
            }
            try db.execute("INSERT INTO job_runs (job, started_at, outcome) VALUES ('old', ?, 'running')", [now - 100 * day])
        }
        let result = run(["--store", store, "--now", "@1800000000", "--json", "maintain-store"])
        #expect(result.code == .success, "\(result.stderr)")
        #expect(result.stdout.contains(#""pruned_runs":2"#))
        let left = try db.query("SELECT started_at FROM job_runs WHERE job = 'old' ORDER BY started_at").map { try $0.get(0, as: Int64.self) }
        #expect(left == [now - 100 * day, now - 29 * day, now - day], "a running row is never pruned; rows inside the retention stay")
    }
}

@Suite(.timeLimit(.minutes(15))) struct DoctorTests {
    let directory = TemporaryDirectory("doctor")

    func run(_ arguments: [String], _ environment: [String: String] = [:]) -> (ExitCode, String) {
        let output = BufferedOutput()
        let app = CommandLineApp(catalog: Catalog(modules: [RunnerModule.module]))
        let code = app.run(arguments: ["--store", directory.file("s.sqlite")] + arguments, environment: ["HOME": directory.path].merging(environment) { $1 },
                           output: output, errorOutput: { _ in })
        return (code, output.text)
    }

    @Test func aHealthyStorePassesAndAMissingKeyIsExplainedNotFailed() {
        let (code, text) = run(["doctor"])
        #expect(code == .success, "\(text)")
        #expect(text.contains("ok    store-integrity: integrity_check reports ok"))
        #expect(text.contains("skip  store-key: no key yet"))
        #expect(text.contains("skip  metrics-dir"))
    }

    @Test func aMissingMetricsDirectoryIsAConfigurationFailure() {
        let (code, text) = run(["doctor"], ["JOB_METRICS_DIR": directory.file("nope")])
        #expect(code == .configuration)
        #expect(text.contains("FAIL  metrics-dir: the metrics directory does not exist"))
    }

    @Test func aReplacedKeyFailsTheKeyCheckWith78() throws {
        let key = directory.file("s.sqlite.key")
        try Data(repeating: 1, count: 32).write(to: URL(fileURLWithPath: key))
        chmod(key, 0o600)
        let first = run(["doctor"])
        #expect(first.0 == .success)
        #expect(first.1.contains("ok    store-key: the store key is readable and matches this store"), "\(first.1)")
        try Data(repeating: 2, count: 32).write(to: URL(fileURLWithPath: key))
        chmod(key, 0o600)
        let (code, text) = run(["doctor"])
        #expect(code == .configuration)
        #expect(text.contains("FAIL  store-key: the store key does not match this store"), "\(text)")
    }
}
