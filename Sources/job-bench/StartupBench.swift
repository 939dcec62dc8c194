import Foundation

/// `startup`: how long `job --help` takes from exec to exit, next to `/bin/true` measured in the same run.
///
/// Times whole processes (fork, exec, dynamic loading, the help text, exit) over `--runs` runs and prints the
/// median and 90th percentile. Pass `--job PATH` for a specific build (e.g. one linked with
/// `--static-swift-stdlib`); by default the `job` beside this executable.
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
        print("startup: \(runs) runs each, wall clock from spawn to exit")
        print("command".padding(toLength: 28, withPad: " ", startingAt: 0) + "median ms   p90 ms")
        for (label, path, args) in [("/bin/true (baseline)", "/bin/true", [String]()), ("job --help", jobPath, ["--help"])] {
            let times = try (0..<runs).map { _ in try timeProcess(path, args) }.sorted()
            let median = times[times.count / 2], p90 = times[times.count * 9 / 10]
            print(label.padding(toLength: 28, withPad: " ", startingAt: 0) + String(format: "%9.2f  %7.2f", median, p90))
        }
    }

    static func timeProcess(_ path: String, _ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        process.waitUntilExit()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    }
}
