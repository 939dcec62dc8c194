import Foundation

/// Runs the built `job` as a real process, to completion or until a SIGKILL (or SIGTERM) at a chosen moment.
package struct ChaosProcess: Sendable {
    /// The `job` executable.
    package let executable: String
    /// The process environment (HOME, PATH, the job's settings).
    package let environment: [String: String]

    package init(executable: String, environment: [String: String]) {
        self.executable = executable
        self.environment = environment
    }

    /// The same executable with `extra` added to the environment.
    package func adding(_ extra: [String: String]) -> ChaosProcess {
        ChaosProcess(executable: executable, environment: environment.merging(extra) { $1 })
    }

    /// What one run left behind.
    package struct Outcome: Sendable {
        /// The exit status, or nil when the process died by SIGKILL.
        package let exitCode: Int32?
        /// True when our SIGKILL landed while the process was still running.
        package let killed: Bool
        package let stdout: String
        package let stderr: String
        package let seconds: Double
    }

    /// Runs `job arguments…`; when `killAfter` is given, sends `signal` (SIGKILL unless told) that many seconds
    /// after the spawn (if the process is still running then). A process not done after `timeout` seconds is
    /// SIGKILLed and reported as a failure by the caller (exit code nil, `killed` false).
    ///
    /// With SIGTERM the job stops gracefully: it counts as killed when it exited 75 (stopped) or died of the
    /// signal (before its handler was installed); an exit 0 means the signal came too late to matter.
    package func run(_ arguments: [String], killAfter: Double? = nil, signal: Int32 = SIGKILL, timeout: Double = 300, stdin: String? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let base = NSTemporaryDirectory() + "chaos-\(UUID().uuidString)"
        defer { for suffix in [".out", ".err", ".in"] { try? FileManager.default.removeItem(atPath: base + suffix) } }
        guard FileManager.default.createFile(atPath: base + ".out", contents: nil) else { throw ChaosFailure("cannot create \(base + ".out")") }
        guard FileManager.default.createFile(atPath: base + ".err", contents: nil) else { throw ChaosFailure("cannot create \(base + ".err")") }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
        defer { try? out.close(); try? err.close() }
        process.standardOutput = out
        process.standardError = err
        if let stdin {
            guard FileManager.default.createFile(atPath: base + ".in", contents: Data(stdin.utf8)) else { throw ChaosFailure("cannot create \(base + ".in")") }
            process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: base + ".in"))
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
        try process.run()
        var killed = false
        var graceful = false
        var deadline = killAfter ?? timeout
        while process.isRunning {
            if elapsed() >= deadline {
                if killAfter != nil && !graceful && !killed && signal != SIGKILL {
                    // SIGTERM: let the pass stop on its own, within the timeout.
                    if kill(process.processIdentifier, signal) == 0 { graceful = true }
                    deadline = timeout
                    continue
                }
                if kill(process.processIdentifier, SIGKILL) == 0 {
                    killed = killAfter != nil && !graceful
                }
                graceful = false
                break
            }
            let remaining = deadline - elapsed()
            usleep(UInt32(max(50, min(2_000, remaining * 1e6))))
        }
        process.waitUntilExit()
        let seconds = elapsed()
        let signalled = process.terminationReason == .uncaughtSignal
        // A kill sent just as the process was exiting on its own does not count as a kill.
        if killed && !signalled { killed = false }
        if graceful { killed = signalled || process.terminationStatus == 75 }
        let stdout = (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
        return Outcome(exitCode: signalled ? nil : process.terminationStatus, killed: killed, stdout: stdout, stderr: stderr, seconds: seconds)
    }

    /// The `counts` object of a `--json` pass result.
    package static func counts(_ json: String) -> [String: Int] {
        guard let line = json.split(separator: "\n").last,
              let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let counts = object["counts"] as? [String: Any] else { return [:] }
        return counts.compactMapValues { ($0 as? NSNumber)?.intValue }
    }
}
