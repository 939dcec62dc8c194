import Chaos
import Foundation

/// `job-bench fuzz-argv [--inputs N] [--seed S] [--timeout SECONDS]`: runs the built `job` on seeded random command
/// lines (`ArgvFuzzer`: every command of `job help --json`, global options, and values of every shape, store paths
/// above all) in a fresh folder each, with a fresh HOME holding a FIFO, a folder and a file, and counts exit codes.
/// No line may end by a signal (a trap is 132, SIGSEGV 139) or exit with a code the README does not list, or run
/// past `--timeout`: the first such line is printed and the scenario exits 1.
enum FuzzArgvBench {
    static let documented: Set<Int32> = [0, 64, 65, 69, 70, 73, 75, 78]

    static func run(_ arguments: ArraySlice<String>) throws {
        var inputs = 500
        var seed: UInt64 = 25
        var timeout = 20
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--inputs": inputs = try BenchOption.integer(&rest, option, in: 1...1_000_000)
            case "--seed": seed = try BenchOption.seed(&rest)
            case "--timeout": timeout = try BenchOption.integer(&rest, option, in: 1...600)
            case "--help":
                print("usage: job-bench fuzz-argv [--inputs N (500)] [--seed S (25)] [--timeout SECONDS (20)]")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let job = try RelayBenchSupport.jobExecutable()
        var fuzzer = ArgvFuzzer(seed: seed, commands: try commandTable(job))
        var codes: [Int32: Int] = [:]
        let started = Date()
        for index in 0..<inputs {
            let line = fuzzer.next()
            let code = try runOnce(job, line, timeout: TimeInterval(timeout))
            codes[code, default: 0] += 1
            guard documented.contains(code) else {
                let shown = line.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
                FileHandle.standardError.write(Data("fuzz-argv: input \(index + 1) ended with \(code == -1 ? "a timeout" : "status \(code)"): job \(shown)\n".utf8))
                exit(1)
            }
        }
        let seconds = Date().timeIntervalSince(started)
        let histogram = codes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        print("fuzz-argv: \(inputs) command lines in \(String(format: "%.1f", seconds)) s, seed \(seed); exit codes: \(histogram); no trap, no undocumented code")
    }

    /// Every job and command of the catalog with its options, read from `job help --json`.
    static func commandTable(_ job: String) throws -> [(words: [String], options: [String])] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: job)
        process.arguments = ["help", "--json"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let catalog = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw BenchUsageError(message: "job help --json gave no catalog") }
        var table: [(words: [String], options: [String])] = []
        for key in ["jobs", "builtins", "commands"] {
            for entry in catalog[key] as? [[String: Any]] ?? [] {
                guard let name = entry["name"] as? String else { continue }
                let options = (entry["options"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                table.append((name.split(separator: " ").map(String.init), options + (key == "jobs" ? ["--dry-run"] : [])))
            }
        }
        return table
    }

    /// Runs one line in a fresh folder (its working directory and HOME); its exit status, 128+N for a signal, -1 on timeout.
    static func runOnce(_ job: String, _ line: [String], timeout: TimeInterval) throws -> Int32 {
        let folder = NSTemporaryDirectory() + "fuzz-argv-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder + "/folder", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        mkfifo(folder + "/fifo", 0o600)
        guard FileManager.default.createFile(atPath: folder + "/file.sqlite", contents: Data("not a store".utf8)) else { throw BenchFailure("fuzz-argv: cannot write its scratch files") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: job)
        process.arguments = line
        process.currentDirectoryURL = URL(fileURLWithPath: folder)
        process.environment = ["HOME": folder, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "JOB_LOG_LEVEL": "error"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(2_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -1
        }
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}
