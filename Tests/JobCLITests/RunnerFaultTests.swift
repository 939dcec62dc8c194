import Foundation
import Testing
import Store
import TestSupport

/// The runner's own faults, met through the built `job`: unusual store paths and environments, signals at
/// start-up, `--json` on a failed `doctor`, misleading messages, and a killed pass in `job status`.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct RunnerFaultTests {
    let home = TemporaryDirectory("faults")
    var env: [String: String] { JobProcess.environment(home: home.path) }

    /// Runs `job arguments…` with `folder` as its working directory (relative store paths land there).
    func run(in folder: String, _ arguments: [String], environment: [String: String]) throws -> JobProcess.Result {
        try JobProcess.start(executable: "/bin/sh", ["-c", "cd \"$0\" && exec \"$@\"", folder, JobProcess.executablePath] + arguments,
                             environment: environment).wait()
    }

    @Test(arguments: [["--store", "x", "status"], ["--store", "0", "status"], ["--store", "d/s.sqlite", "status"],
                      ["--store", "./y", "status"], ["--store", "e//f/", "status"], ["--store", "g/h/i.sqlite", "migrate"]])
    func shortAndNestedRelativeStorePathsWorkInsteadOfTrapping(arguments: [String]) throws {
        let folder = TemporaryDirectory("paths")
        let result = try run(in: folder.path, arguments, environment: env)
        #expect(result.exitCode == 0, "\(arguments): \(result.exitCode) \(result.stderr)")
        let path = arguments[1].hasSuffix("/") ? String(arguments[1].dropLast()) : arguments[1]
        #expect(FileManager.default.fileExists(atPath: folder.file(path)), "the store is created where --store says")
    }

    @Test func aOneCharacterJobStoreFromTheEnvironmentWorks() throws {
        let folder = TemporaryDirectory("paths")
        var environment = env
        environment["JOB_STORE"] = "y"
        let result = try run(in: folder.path, ["status"], environment: environment)
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.file("y")))
    }

    @Test(arguments: ["", "relative/home"])
    func anEmptyOrRelativeHomeIsRefusedNamingTheVariable(homeValue: String) throws {
        let folder = TemporaryDirectory("paths")
        var environment = env
        environment["HOME"] = homeValue
        let result = try run(in: folder.path, ["status"], environment: environment)
        #expect(result.exitCode == 78, "\(result.stderr)")
        #expect(result.stderr.contains("HOME is"), "\(result.stderr)")
        #expect(result.stderr.contains("XDG_STATE_HOME") && result.stderr.contains("JOB_STORE"), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "nothing is created")
    }

    @Test func anAbsoluteXDGStateHomeStillPlacesTheStoreWhenHomeIsEmpty() throws {
        var environment = env
        environment["HOME"] = ""
        environment["XDG_STATE_HOME"] = home.file("state")
        let result = try JobProcess.run(["status"], environment: environment)
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: home.file("state/background-jobs/store.sqlite")))
    }

    @Test func aFailedDoctorWithJSONPrintsExactlyOneJSONValue() throws {
        let result = try JobProcess.run(["--store", home.file("s.sqlite"), "--metrics-dir", home.file("missing"), "--json", "doctor"], environment: env)
        #expect(result.exitCode == 78)
        let object = try result.jsonObject()  // fails when stdout holds two values
        #expect(object["ok"] as? Bool == false)
        #expect(object["exit_code"] as? Int == 78)
        #expect((object["error"] as? [String: Any])?["category"] as? String == "doctor-failed")
        #expect((object["checks"] as? [Any])?.isEmpty == false)
    }

    @Test(arguments: ["/dev/null", "fifo"])
    func aSpecialFileAsTheStoreIsNamedAsSuchNotAsAnEmptyStore(path: String) throws {
        var store = path
        if path == "fifo" {
            store = home.file("fifo")
            #expect(mkfifo(store, 0o600) == 0)
        }
        let result = try JobProcess.run(["--store", store, "status"], environment: env)
        #expect(result.exitCode == 73)
        #expect(result.stderr.contains("special file"), "\(result.stderr)")
        #expect(!result.stderr.contains("empty"), "\(result.stderr)")
    }

    @Test func aFolderAsTheStoreKeyIsNamedAsSuchNotAsReadableByOthers() throws {
        let store = home.file("s.sqlite")
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        try FileManager.default.createDirectory(atPath: home.file("keydir"), withIntermediateDirectories: true)
        chmod(home.file("keydir"), 0o755)
        var environment = env
        environment["JOB_STORE_KEY_FILE"] = home.file("keydir")
        let result = try JobProcess.run(["--store", store, "doctor"], environment: environment)
        #expect(result.exitCode == 78)
        #expect(result.stdout.contains("FAIL  store-key: the store key path is a folder"), "\(result.stdout)")
        #expect(!result.stdout.contains("readable by others") && !result.stdout.contains("can be read by its group"), "\(result.stdout)")
    }

    static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        let probe = try? ExternalTool.run("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", "d=$(mktemp -d) && mount --bind -o ro $d $d"])
        return probe?.status == 0
    }()

    @Test(.enabled(if: RunnerFaultTests.canMount, "needs root and mount namespaces (CI runs as root)"))
    func doctorReportsAStoreOnAReadOnlyMountInsteadOfFailingToOpenIt() throws {
        let folder = home.file("ro")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(try JobProcess.run(["--store", folder + "/s.sqlite", "migrate"], environment: env).exitCode == 0)
        let script = "mount --bind -o ro \"$0\" \"$0\" && exec \"$1\" --json --store \"$0/s.sqlite\" doctor"
        let result = try ExternalTool.run("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", script, folder, JobProcess.executablePath],
                                          environment: env, separateStderr: true)
        // A warning, not a failure: doctor exits 0 (it vets read-only copies); the passes still exit 73.
        #expect(result.status == 0, "\(result.stderr)\n\(result.output)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
        #expect(object["ok"] as? Bool == true && object["exit_code"] == nil, "\(object)")
        let checks = try #require(object["checks"] as? [[String: Any]])
        let status = Dictionary(checks.map { ($0["name"] as? String ?? "", $0["status"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(status["store-integrity"] == "ok", "the report goes on past the read-only store: \(checks)")
        #expect(status["store-writable"] == "WARN")
        #expect(!status.values.contains("FAIL"), "\(checks)")
        #expect((checks.first { $0["name"] as? String == "store-writable" }?["detail"] as? String)?.contains("read-only") == true)
        let pass = try ExternalTool.run("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c",
                                                            "mount --bind -o ro \"$0\" \"$0\" && exec \"$1\" --store \"$0/s.sqlite\" maintain-store", folder, JobProcess.executablePath],
                                        environment: env, separateStderr: true)
        #expect(pass.status == 73, "a pass on the read-only store still fails: \(pass.stderr)")
    }

    /// This host's name as the lease holder records it.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func aPassWhoseHolderProcessIsGoneIsShownAsKilledNotRunning() throws {
        let store = home.file("s.sqlite")
        #expect(try JobProcess.run(["--store", store, "maintain-store"], environment: env).exitCode == 0)
        // What a SIGKILLed pass leaves: its `running` row and its unexpired lease, held by a pid that no longer exists.
        let started = Int64(Date().timeIntervalSince1970 * 1000)
        do {
            let database = try Database(path: store)
            try database.write { db in
                _ = try db.execute("INSERT INTO job_runs (job, started_at, outcome) VALUES ('maintain-store', ?, 'running')", [started])
                _ = try db.execute("DELETE FROM job_leases WHERE job = 'maintain-store'")
                _ = try db.execute("INSERT INTO job_leases (job, holder, acquired_at, expires_at) VALUES ('maintain-store', ?, ?, ?)",
                               ["\(Self.hostName()):999999999:1", started, started + 3_600_000])
            }
        }
        let text = try JobProcess.run(["--store", store, "status"], environment: env)
        let line = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix("maintain-store ") }, "\(text.stdout)")
        #expect(line.contains("failed (killed)"), "\(line)")
        #expect(!line.contains("running"), "\(line)")
        let json = try JobProcess.run(["--store", store, "--json", "status"], environment: env)
        let rows = try #require(try json.json() as? [[String: Any]])
        let row = try #require(rows.first { $0["job"] as? String == "maintain-store" })
        #expect(row["outcome"] as? String == "failed")
        #expect(row["reason"] as? String == "killed")
    }

    @Test func aPassWhoseHolderIsAliveIsStillShownAsRunning() throws {
        let store = home.file("s.sqlite")
        #expect(try JobProcess.run(["--store", store, "maintain-store"], environment: env).exitCode == 0)
        let holder = try JobProcess.start(executable: "/bin/sleep", ["30"], environment: env)
        defer { holder.signal(SIGKILL); _ = try? holder.wait() }
        let stat = try String(contentsOfFile: "/proc/\(holder.pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        let started = Int64(Date().timeIntervalSince1970 * 1000)
        do {
            let database = try Database(path: store)
            try database.write { db in
                _ = try db.execute("INSERT INTO job_runs (job, started_at, outcome) VALUES ('maintain-store', ?, 'running')", [started])
                _ = try db.execute("DELETE FROM job_leases WHERE job = 'maintain-store'")
                _ = try db.execute("INSERT INTO job_leases (job, holder, acquired_at, expires_at) VALUES ('maintain-store', ?, ?, ?)",
                               ["\(Self.hostName()):\(holder.pid):\(fields[19])", started, started + 3_600_000])
            }
        }
        let json = try JobProcess.run(["--store", store, "--json", "status"], environment: env)
        let rows = try #require(try json.json() as? [[String: Any]])
        #expect(rows.first { $0["job"] as? String == "maintain-store" }?["outcome"] as? String == "running")
    }

    /// A migrated store with `devices` relay devices and some ledger rows, checkpointed into the main file.
    func storeWithRelayRows(_ store: String, devices: Int) throws {
        #expect(try JobProcess.run(["--store", store, "maintain-store"], environment: env).exitCode == 0)
        let db = try Database(path: store)
        try db.write { db in
            for i in 0..<devices {
                _ = try db.execute("INSERT INTO relay_devices (device_index, created_at) VALUES (?, ?)", [Array(repeating: UInt8(i % 251), count: 32) + withUnsafeBytes(of: Int64(i)) { Array($0) }, Int64(i)])
            }
            for i in 0..<500 { _ = try db.execute("INSERT INTO job_runs (job, started_at, outcome) VALUES (?, ?, 'completed')", ["job-\(i % 7)", Int64(i)]) }
        }
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    @Test func doctorRunsTheFullIntegrityCheckAndReportsAnIndexThatNoLongerMatchesItsTable() throws {
        let store = home.file("s.sqlite")
        try storeWithRelayRows(store, devices: 10)
        // An index whose entries no longer match its table: quick_check passes it, integrity_check does not.
        do {
            let db = try Database(path: store)
            try db.execute("PRAGMA writable_schema = ON")
            _ = try db.execute("UPDATE sqlite_schema SET sql = replace(sql, '(job, started_at)', '(job DESC, started_at)') WHERE name = 'job_runs_by_job'", [])
        }
        let quick: [String] = try Database(path: store).query("PRAGMA quick_check").map { try $0.get(0) }
        try #require(quick == ["ok"], "the damage is one quick_check cannot see")
        let result = try JobProcess.run(["--store", store, "doctor"], environment: env)
        #expect(result.exitCode == 73, "\(result.stdout)")
        #expect(result.stdout.contains("FAIL  store-integrity: integrity_check found"), "\(result.stdout)")
    }

    @Test func maintainStoreRefusesAStoreWithAZeroedPageBeforeWritingAnything() throws {
        let store = home.file("s.sqlite")
        try storeWithRelayRows(store, devices: 3_000)
        let leaves: [Int] = try Database(path: store).query("SELECT pageno FROM dbstat WHERE name = 'relay_devices' AND pagetype = 'leaf' ORDER BY pageno")
            .map { try $0.get(0) }
        try #require(leaves.count > 2, "the devices span several pages")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: store))
        let page = 4096 * (leaves[leaves.count / 2] - 1)
        bytes.replaceSubrange(page..<(page + 4096), with: Data(count: 4096))
        try bytes.write(to: URL(fileURLWithPath: store))
        let result = try JobProcess.run(["--store", store, "--json", "maintain-store"], environment: env)
        #expect(result.exitCode == 73, "\(result.stderr)")
        #expect(result.stderr.contains("damaged"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: store)) == bytes, "not even the lease or the ledger row was written")
        let walSize = (try? FileManager.default.attributesOfItem(atPath: store + "-wal")[.size] as? Int) ?? 0
        #expect(walSize == 0, "nothing went into the WAL either")
    }

    @Test func theLedgerIsRecordedAndPrunedOnOneClockTheEmulatedDayWhenGiven() throws {
        let store = home.file("s.sqlite")
        // An emulated month in the past: on the real clock these rows would be "new" and never pruned.
        let day: Int64 = 86_400
        let start: Int64 = 1_600_000_000
        var pruned: [Int] = []
        for offset in [0, 10, 20, 35] {
            let result = try JobProcess.run(["--store", store, "--now", "@\(start + Int64(offset) * day)", "--json", "maintain-store"], environment: env)
            #expect(result.exitCode == 0, "\(result.stderr)")
            pruned.append((try result.jsonObject()["counts"] as? [String: Any])?["pruned_runs"] as? Int ?? -1)
        }
        #expect(pruned == [0, 0, 0, 1], "the day-0 pass is pruned once it is 30 days old on the emulated clock")
        let started: [Int64] = try Database(path: store).query("SELECT started_at FROM job_runs WHERE job = 'maintain-store' ORDER BY id").map { try $0.get(0) }
        #expect(started == [10, 20, 35].map { (start + $0 * day) * 1000 }, "rows carry the emulated day they ran on")
        let status = try JobProcess.run(["--store", store, "--json", "status"], environment: env)
        let row = try #require((try status.json() as? [[String: Any]])?.first { $0["job"] as? String == "maintain-store" })
        #expect((row["finished_at"] as? String)?.hasPrefix("2020-10-18T12:26:40") == true, "status shows the emulated day: \(row)")
    }
}
