import Foundation
import Synchronization

/// Runs the built `job` executable as a real process, for end-to-end tests.
package struct JobProcess {
    /// What a finished process left behind.
    package struct Result: Sendable {
        package let exitCode: Int32
        package let stdout: String
        package let stderr: String
        /// stdout parsed as JSON (for `--json` runs).
        package func json() throws -> Any { try JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
        package func jsonObject() throws -> [String: Any] {
            guard let object = try json() as? [String: Any] else { throw TestFailure("stdout is not a JSON object: \(stdout)") }
            return object
        }
    }

    /// The `job` binary the tests run: `TEST_JOB_EXECUTABLE` when set (`scripts/test` sets it to a build linked as
    /// operators install it, with the Swift runtime and Foundation inside), else the one beside the test bundle
    /// (`swift test` builds it because the test target depends on it).
    package static var executablePath: String {
        if let path = ProcessInfo.processInfo.environment["TEST_JOB_EXECUTABLE"], !path.isEmpty { return path }
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleDirectory, bundleDirectory.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("job").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let selfExe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: selfExe).deletingLastPathComponent().appendingPathComponent("job").path
    }

    /// A minimal environment: no inherited configuration leaks into a test (HOME points at `home`).
    package static func environment(home: String, _ extra: [String: String] = [:]) -> [String: String] {
        var env = ["HOME": home, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "LANG": "C.UTF-8"]
        for (key, value) in extra { env[key] = value }
        return env
    }

    /// Runs `job arguments…` to completion (killed after `timeout` seconds) and returns its exit code and output.
    @discardableResult
    package static func run(_ arguments: [String], environment: [String: String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> Result {
        let running = try start(arguments, environment: environment, stdin: stdin)
        return try running.wait(timeout: timeout)
    }

    /// Starts `job arguments…` and returns at once.
    package static func start(_ arguments: [String], environment: [String: String], stdin: String? = nil) throws -> Running {
        try Running(executable: executablePath, arguments: arguments, environment: environment, stdin: stdin)
    }

    /// Starts any program (e.g. `nsenter … job`, a Python test peer) with the same output handling, and returns at once.
    package static func start(executable: String, _ arguments: [String], environment: [String: String], stdin: String? = nil) throws -> Running {
        try Running(executable: executable, arguments: arguments, environment: environment, stdin: stdin)
    }

    /// A process started by `start`: signal it, wait for it.
    ///
    /// Its exit is an event, not a poll: Foundation's `terminationHandler` (set before the process starts, so no exit
    /// can be missed) leaves `exited`, which a synchronous caller waits on with a deadline (`wait`) and an async test
    /// awaits without holding a thread of the cooperative pool (`finished`).
    package final class Running: @unchecked Sendable {
        package let process = Process()
        private let outFile: String
        private let errFile: String
        private let exited = DispatchGroup()

        init(executable: String, arguments: [String], environment: [String: String], stdin: String?) throws {
            // Output goes to files, not pipes: a chatty child can never block on a full pipe while we wait.
            let base = NSTemporaryDirectory() + "jobproc-\(UUID().uuidString)"
            outFile = base + ".out"
            errFile = base + ".err"
            _ = FileManager.default.createFile(atPath: outFile, contents: nil)
            _ = FileManager.default.createFile(atPath: errFile, contents: nil)
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.environment = environment
            let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outFile))
            let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errFile))
            // The child has its own copies once started: the parent's are closed at once, or every process a test
            // starts keeps two descriptors open for as long as the Process object lives (a suite reached 2,000,
            // and Foundation's Process.run() over-reads /proc/self/fd entries once there are that many).
            defer {
                try? out.close()
                try? err.close()
            }
            process.standardOutput = out
            process.standardError = err
            exited.enter()
            process.terminationHandler = { [exited] _ in exited.leave() }
            if let stdin {
                let pipe = Pipe()
                process.standardInput = pipe
                try process.run()
                pipe.fileHandleForWriting.write(Data(stdin.utf8))
                try pipe.fileHandleForWriting.close()
            } else {
                process.standardInput = FileHandle.nullDevice
                try process.run()
            }
        }

        package var pid: Int32 { process.processIdentifier }

        /// Sends `signal` (SIGTERM, SIGKILL…).
        package func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

        /// Output written so far.
        package var stdoutSoFar: String { (try? String(contentsOfFile: outFile, encoding: .utf8)) ?? "" }
        package var stderrSoFar: String { (try? String(contentsOfFile: errFile, encoding: .utf8)) ?? "" }

        /// Waits for exit (SIGKILL after `timeout`) and collects the output, blocking the calling thread: for
        /// synchronous tests.
        package func wait(timeout: TimeInterval = 60) throws -> Result {
            if exited.wait(timeout: .now() + timeout) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                exited.wait()
                throw timedOut(timeout)
            }
            return collect()
        }

        /// Waits for exit (SIGKILL after `timeout`) and collects the output, suspending instead of blocking: an
        /// async test that awaits a child holds no thread of the cooperative pool meanwhile.
        package func finished(timeout: TimeInterval = 60) async throws -> Result {
            if await !exited(within: timeout) {
                kill(process.processIdentifier, SIGKILL)
                _ = await exited(within: .infinity)
                throw timedOut(timeout)
            }
            return collect()
        }

        /// True once the process has exited, false when `seconds` passed first.
        private func exited(within seconds: TimeInterval) async -> Bool {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer = Answer(continuation)
                exited.notify(queue: .global()) { answer.give(true) }
                if seconds.isFinite { DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { answer.give(false) } }
            }
        }

        private func timedOut(_ timeout: TimeInterval) -> TestFailure {
            TestFailure("job \(process.arguments ?? []) did not finish within \(timeout) s; stderr: \(stderrSoFar)")
        }

        /// The exit code (128 + the signal for a process a signal ended, as a shell reports it) and the output.
        private func collect() -> Result {
            defer {
                try? FileManager.default.removeItem(atPath: outFile)
                try? FileManager.default.removeItem(atPath: errFile)
            }
            let code = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
            return Result(exitCode: code, stdout: stdoutSoFar, stderr: stderrSoFar)
        }

        /// Resumes a continuation with the first answer given; later ones are dropped.
        private final class Answer: Sendable {
            private let continuation: Mutex<CheckedContinuation<Bool, Never>?>
            init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation = Mutex(continuation) }
            func give(_ value: Bool) { continuation.withLock { $0.take() }?.resume(returning: value) }
        }
    }
}

/// A failure raised by test helpers, with a message.
package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
