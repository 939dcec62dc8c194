import Foundation
import Grants
import Runner

/// `sweep-grants`: one real `job sweep-grants` pass over N issued grants (10 % idle-expired by default), next to
/// the same UPDATE/DELETE statements run as plain SQL through the `sqlite3` shell on an identical copy, in the same run.
///
/// Both run as child processes, so wall time and peak memory (the child's own `VmHWM`, see `SweepChildProcess`) are comparable:
/// target at most 1.5× the baseline time and under 64 MiB. Build both first: `swift build -c release` (the pass
/// runs the `job` binary beside `job-bench`).
enum SweepGrantsBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var rows = 1_000_000
        var expiredPercent = 10
        var keep = false
        var rounds = 5
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--rows":
                guard let value = rest.popFirst(), let n = Int(value), (1000...50_000_000).contains(n) else {
                    throw BenchUsageError(message: "--rows needs a whole number from 1000 to 50000000")
                }
                rows = n
            case "--expired-percent":
                guard let value = rest.popFirst(), let n = Int(value), (0...100).contains(n) else {
                    throw BenchUsageError(message: "--expired-percent needs a whole number from 0 to 100")
                }
                expiredPercent = n
            case "--rounds":
                guard let value = rest.popFirst(), let n = Int(value), (1...20).contains(n) else {
                    throw BenchUsageError(message: "--rounds needs a whole number from 1 to 20")
                }
                rounds = n
            case "--keep":
                keep = true
            case "--help", "-h":
                print("usage: job-bench sweep-grants [--rows N] [--expired-percent P] [--rounds R] [--keep]")
                print("  --rows N              issued grants in the store (default 1000000)")
                print("  --expired-percent P   share idle past their deadline (default 10)")
                print("  --rounds R            passes of each on fresh copies, order alternating; the median is compared (default 5)")
                print("  --keep                leave the stores in the temporary folder")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }

        let folder = try RelayBenchSupport.scratch("sweep-grants")
        defer { if !keep { try? FileManager.default.removeItem(atPath: folder) } }
        let pristinePath = folder + "/pristine.sqlite"
        let storePath = folder + "/store.sqlite"
        let copyPath = folder + "/baseline.sqlite"
        let now: Int64 = 1_780_000_000_000

        let buildStart = Date()
        try build(pristinePath, rows: rows, expiredPercent: expiredPercent, now: now)
        print("sweep-grants: \(rows) issued grants, \(expiredPercent)% idle-expired (built in \(String(format: "%.1f", Date().timeIntervalSince(buildStart))) s); \(rounds) round(s) on fresh identical copies")

        let retentionCutoff = now / 1000 * 1000 - 30 * 86_400_000
        var script = "PRAGMA journal_mode = WAL;\nPRAGMA synchronous = FULL;\nPRAGMA foreign_keys = ON;\nBEGIN IMMEDIATE;\n"
        for step in SweepStep.all {
            let argument = step.argument(now / 1000 * 1000, retentionCutoff, retentionCutoff)
            script += step.plainSQL.replacingOccurrences(of: "?1", with: String(argument)) + ";\n"
        }
        script += "COMMIT;\n"

        var rowsOut: [[String]] = []
        var jobRuns: [SweepChildProcess.Outcome] = []
        var baselineRuns: [SweepChildProcess.Outcome] = []
        var lastCounts = ""
        for round in 1...rounds {
            for path in [storePath, copyPath] {
                try? FileManager.default.removeItem(atPath: path)
                try FileManager.default.copyItem(atPath: pristinePath, toPath: path)
            }
            sync()  // the copies' dirty pages must not be written back during either timed run
            func runJob() throws -> SweepChildProcess.Outcome {
                let job = try SweepChildProcess.run(executable: siblingExecutable("job"),
                                               arguments: ["--store", storePath, "--now", "@\(now / 1000)", "--json", "sweep-grants"])
                guard job.status == 0 else { throw BenchFailure("job sweep-grants exited \(job.status): \(job.stderr)") }
                return job
            }
            func runBaseline() throws -> SweepChildProcess.Outcome {
                let baseline = try SweepChildProcess.run(executable: "/usr/bin/sqlite3", arguments: [copyPath], stdin: script)
                guard baseline.status == 0 else { throw BenchFailure("sqlite3 exited \(baseline.status): \(baseline.stderr)") }
                return baseline
            }
            // Alternate which goes first, so neither always meets the warmer page cache.
            let job: SweepChildProcess.Outcome
            let baseline: SweepChildProcess.Outcome
            if round % 2 == 1 { job = try runJob(); baseline = try runBaseline() } else { baseline = try runBaseline(); job = try runJob() }
            let lapsedJob = try count(storePath, "SELECT count(*) FROM grants_issued WHERE revoke_reason = 'expired'")
            let lapsedBaseline = try count(copyPath, "SELECT count(*) FROM grants_issued WHERE revoke_reason = 'expired'")
            if lapsedJob != lapsedBaseline { print("MISMATCH in round \(round): the pass lapsed \(lapsedJob), the baseline \(lapsedBaseline)") }
            jobRuns.append(job)
            baselineRuns.append(baseline)
            lastCounts = job.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            rowsOut.append(["\(round)", CryptoBench.format(job.seconds * 1000, decimals: 0), CryptoBench.format(baseline.seconds * 1000, decimals: 0),
                            CryptoBench.format(job.seconds / max(baseline.seconds, 0.000_001), decimals: 2),
                            CryptoBench.format(Double(job.maxRSSKiB) / 1024, decimals: 1), CryptoBench.format(Double(baseline.maxRSSKiB) / 1024, decimals: 1),
                            String(lapsedJob)])
        }
        CryptoBench.printTable(header: ["round", "job sweep-grants ms", "sqlite3 plain SQL ms", "ratio", "job peak MiB", "sqlite3 peak MiB", "lapsed"],
                               rows: rowsOut)
        let jobMedian = median(jobRuns.map(\.seconds))
        let baselineMedian = median(baselineRuns.map(\.seconds))
        let peak = Double(jobRuns.map(\.maxRSSKiB).max() ?? 0) / 1024
        print("median: job \(CryptoBench.format(jobMedian * 1000, decimals: 0)) ms (batches of 1,000, one transaction each), " +
              "sqlite3 \(CryptoBench.format(baselineMedian * 1000, decimals: 0)) ms (one transaction)")
        print("ratio \(CryptoBench.format(jobMedian / max(baselineMedian, 0.000_001), decimals: 2))× (target ≤ 1.50×); " +
              "job peak memory \(CryptoBench.format(peak, decimals: 1)) MiB (target < 64 MiB)")
        print("last job result: \(lastCounts)")
        // A second pass over the swept stores: the daily cost when nothing has lapsed.
        let idleJob = try SweepChildProcess.run(executable: siblingExecutable("job"),
                                                arguments: ["--store", storePath, "--now", "@\(now / 1000)", "--json", "sweep-grants"])
        let idleBaseline = try SweepChildProcess.run(executable: "/usr/bin/sqlite3", arguments: [copyPath], stdin: script)
        print("nothing left to do: job \(CryptoBench.format(idleJob.seconds * 1000, decimals: 0)) ms, " +
              "sqlite3 \(CryptoBench.format(idleBaseline.seconds * 1000, decimals: 0)) ms")
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    /// Creates the store with the real migrations and fills `grants_issued` with random sealed-size blobs.
    static func build(_ path: String, rows: Int, expiredPercent: Int, now: Int64) throws {
        let database = try Database(path: path)
        try Catalog(modules: [RunnerModule.module, GrantsModule.module]).migrator.migrate(database, now: now)
        let day: Int64 = 86_400_000
        var inserted = 0
        while inserted < rows {
            let batch = min(50_000, rows - inserted)
            try database.write { db in
                try db.execute("""
                    WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 + ?2 - 1)
                    INSERT INTO grants_issued (grant_index, grant_sealed, secret_sealed, endpoint_index, endpoint_sealed,
                                               lifetime_ms, created_at, expires_at, last_used_at)
                    SELECT randomblob(32), randomblob(44), randomblob(60), randomblob(32), randomblob(60), ?3, ?4 - 200 * ?5,
                           CASE WHEN i % 100 < ?6 THEN ?4 - (1 + i % 50) * ?5 ELSE ?4 + (1 + i % 80) * ?5 END, ?4 - 100 * ?5
                    FROM n
                    """, [Int64(inserted), Int64(batch), 90 * day, now, day, Int64(expiredPercent)])
            }
            inserted += batch
        }
        try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    static func count(_ path: String, _ sql: String) throws -> Int {
        try Database(path: path).scalar(sql) ?? -1
    }

    /// An executable built beside this one (`.build/<config>/job`).
    static func siblingExecutable(_ name: String) -> String {
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: selfPath).deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// Runs a child process to completion and reports its wall time and peak RSS.
///
/// The peak is the child's own `VmHWM` (`/proc/PID/status`), read every 2 ms while it runs once it has exec'd
/// (its `Name:` is the executable's): `wait4`'s `ru_maxrss` cannot be used, since `posix_spawn` starts the child
/// on the parent's memory (`CLONE_VM | CLONE_VFORK`) and the kernel carries that memory's high-water mark into
/// the child's `maxrss` at `exec`, so every child would show at least `job-bench`'s own peak. Growth in the child's
/// last 2 ms can be missed; `wait4`'s figure is kept as `maxRSSUpperBoundKiB`.
enum SweepChildProcess {
    struct Outcome {
        let status: Int32
        let seconds: Double
        let maxRSSKiB: Int
        let maxRSSUpperBoundKiB: Int
        let stdout: String
        let stderr: String
    }

    /// `environment` replaces the child's environment (nil: job-bench's own).
    static func run(executable: String, arguments: [String], stdin: String? = nil, environment: [String: String]? = nil) throws -> Outcome {
        let folder = NSTemporaryDirectory()
        let outPath = folder + "child-\(getpid())-\(UUID().uuidString).out"
        let errPath = outPath + ".err"
        let inPath = outPath + ".in"
        _ = FileManager.default.createFile(atPath: inPath, contents: Data((stdin ?? "").utf8))
        defer { [outPath, errPath, inPath].forEach { try? FileManager.default.removeItem(atPath: $0) } }
        var actions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let rc = envp.map { posix_spawn(&pid, executable, &actions, nil, argv, $0) } ?? posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchFailure("cannot start \(executable) (errno \(rc))") }
        let watcher = PeakWatcher(pid: pid, name: String(URL(fileURLWithPath: executable).lastPathComponent.prefix(15)))
        let watching = Thread { watcher.watch() }
        watching.start()
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let peakKiB = watcher.finish()
        let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: exitStatus, seconds: seconds, maxRSSKiB: peakKiB, maxRSSUpperBoundKiB: usage.ru_maxrss,
                       stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                       stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }
}

