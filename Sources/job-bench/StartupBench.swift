import Foundation

/// `startup`: how long `job --help` and `job status` take from exec to exit, next to `/bin/true` in the same run.
///
/// Times whole processes (fork, exec, dynamic loading, the work, exit) over `--runs` runs and prints the median
/// and 90th percentile. `job status` reads a store this scenario migrates first in a temporary folder (removed
/// afterwards), so it measures opening SQLite and reading the ledger, not creating the schema. Pass `--job PATH`
/// for a specific build (e.g. one linked with `--static-swift-stdlib`); by default the `job` beside this executable.
enum StartupBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var runs = 50
        var jobPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("job").path
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--runs":
                guard let value = rest.popFirst(), let n = Int(value), (5...10_000).contains(n) else {
                    throw BenchUsageError(message: "--runs needs a whole number from 5 to 10000")
                }
                runs = n
            case "--job":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--job needs a path") }
                jobPath = value
            case "--help", "-h":
                print("usage: job-bench startup [--runs N] [--job PATH]")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        guard FileManager.default.isExecutableFile(atPath: jobPath) else {
            throw BenchUsageError(message: "no job executable at the given path; build it first (swift build -c release --product job)")
        }
        let scratch = try DiskScratch.make("startup", base: nil)  // a real disk, never tmpfs
        let folder = URL(fileURLWithPath: scratch.path)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.appendingPathComponent("store.sqlite").path
        let migrated = try spawnAndWait(jobPath, ["--store", store, "migrate"])
        guard migrated == 0 else { throw BenchUsageError(message: "job migrate exited \(migrated) on a new store") }

        print("startup: \(runs) runs each, wall clock from spawn to exit; store in \(scratch.path) (\(scratch.filesystem))")
        print("command".padding(toLength: 28, withPad: " ", startingAt: 0) + "median ms   p90 ms")
        let commands = [("/bin/true (baseline)", "/bin/true", [String]()), ("job --help", jobPath, ["--help"]),
                        ("job status (migrated store)", jobPath, ["--store", store, "status"])]
        for (label, path, args) in commands {
            let times = try (0..<runs).map { _ in try timeProcess(path, args) }.sorted()
            let median = times[times.count / 2], p90 = times[times.count * 9 / 10]
            print(label.padding(toLength: 28, withPad: " ", startingAt: 0) + String(format: "%9.2f  %7.2f", median, p90))
        }
    }

    /// Milliseconds from spawn to exit of one run.
    static func timeProcess(_ path: String, _ arguments: [String]) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        _ = try spawnAndWait(path, arguments)
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    }

    /// Runs the command once and returns its exit status (128 + N for a signal). Spawns with `posix_spawn` and
    /// reaps with `waitpid`: Foundation's `Process` adds tens of milliseconds of its own, which would swamp what is
    /// measured. stdout and stderr go to /dev/null.
    static func spawnAndWait(_ path: String, _ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchUsageError(message: "cannot start the command (errno \(rc))") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}
