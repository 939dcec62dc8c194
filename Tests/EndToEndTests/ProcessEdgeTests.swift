import Foundation
import Store
import Testing
import TestSupport

/// The process's edges: standard input, argument bytes, an empty store file, signals early and mid-pass.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ProcessEdgeTests {
    let home = TemporaryDirectory("edges")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    @Test func standardInputOverOneMiBIsRefusedWith65AndNothingIsStored() throws {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        // 2 MiB of hex digits: the first 64 would look like a key, so only the cap can refuse it.
        let script = "head -c 2097152 /dev/zero | tr '\\0' 'a' | \"$0\" --store \"$1\" identity import"
        let result = try ExternalTool.run("/bin/sh", ["-c", script, JobProcess.executablePath, store], environment: env, separateStderr: true)
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr == "job: standard input is larger than 1 MiB; give the value itself, not a whole file\n")
        #expect(try Database(path: store).scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'identities'") as Int? == 0
                || Database(path: store).scalar("SELECT count(*) FROM identities") as Int? == 0)
    }

    @Test func aStorePathThatIsNotUTF8IsRefusedNotRewritten() throws {
        let script = "exec \"$0\" --store \"$1/$(printf 'st\\377re.sqlite')\" migrate"
        let result = try ExternalTool.run("/bin/sh", ["-c", script, JobProcess.executablePath, home.path], environment: env, separateStderr: true)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr == "job: argument 2 is not valid UTF-8; paths and values must be UTF-8\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).filter { $0.contains("re.sqlite") }.isEmpty,
                "no store under a rewritten name")
        let viaEnvironment = try ExternalTool.run("/bin/sh", ["-c", "JOB_STORE=\"$1/$(printf 'st\\377re.sqlite')\" exec \"$0\" migrate", JobProcess.executablePath, home.path],
                                                  environment: env, separateStderr: true)
        #expect(viaEnvironment.status == 78, "\(viaEnvironment.stderr)")
        #expect(viaEnvironment.stderr.hasPrefix("job: JOB_STORE is not valid UTF-8"))
    }

    @Test func aZeroByteStoreFileIsRefusedWith73UnlessMigrateIsRun() throws {
        #expect(FileManager.default.createFile(atPath: store, contents: Data()))
        for command in [["maintain-store"], ["status"], ["settings", "list"]] {
            let result = try JobProcess.run(["--store", store] + command, environment: env)
            #expect(result.exitCode == 73, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("the store file is empty (0 bytes)"), "\(command)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: store)[.size] as? Int == 0, "left untouched")
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        #expect(try JobProcess.run(["--store", store, "maintain-store"], environment: env).exitCode == 0)
    }

    @Test func sigtermBeforeThePassBeginsStillExits75() throws {
        // A store in rollback-journal mode, exclusively locked by another process: the job blocks while opening it.
        let unlock = try StoreSeeding.lockedExclusively(store)
        defer { unlock() }

        let pass = try JobProcess.start(["--store", store, "maintain-store"], environment: env)
        // Wait until the process catches SIGTERM (its handler is installed first thing), then signal it.
        #expect(StoreSeeding.waitUntil(timeout: 20) { Self.catchesSIGTERM(pid: pass.pid) })
        pass.signal(SIGTERM)
        let result = try pass.wait(timeout: 20)
        #expect(result.exitCode == 75, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "stopped at once, not after waiting out the lock: \(result.stderr)")
    }

    @Test func aPassStoppedBySIGTERMReportsTheCountsItCommitted() throws {
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        try Database(path: store).write { db in
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400000)
                INSERT INTO grants_issued (grant_index, grant_sealed, secret_sealed, endpoint_index, endpoint_sealed, lifetime_ms, created_at, expires_at)
                SELECT randomblob(16), x'00', x'00', x'01', x'00', 1000, 1, 1001 FROM n
                """)
        }
        let pass = try JobProcess.start(["--store", store, "sweep-grants", "--json"], environment: env)
        #expect(try StoreSeeding.waitUntil(timeout: 30) { try Self.lapsed(store) > 0 })
        pass.signal(SIGTERM)
        let result = try pass.wait(timeout: 60)
        #expect(result.exitCode == 75, "\(result.stderr)")
        let committed = try Self.lapsed(store)
        try #require(committed < 400_000, "the pass was stopped part-way")
        let counts = try #require(try result.jsonObject()["counts"] as? [String: Any])
        #expect(counts["lapsed"] as? Int == committed)
        let ledger: String? = try Database(path: store).scalar("SELECT counts FROM job_runs WHERE job = 'sweep-grants'")
        #expect(ledger == "{\"lapsed\":\(committed)}")
    }

    static func lapsed(_ store: String) throws -> Int {
        try Database(path: store).scalar("SELECT count(*) FROM grants_issued WHERE revoke_reason = 'expired'") ?? -1
    }

    /// True when `/proc/PID/status` lists SIGTERM (15) among the caught signals.
    static func catchesSIGTERM(pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
              let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return mask & (1 << 14) != 0
    }
}
