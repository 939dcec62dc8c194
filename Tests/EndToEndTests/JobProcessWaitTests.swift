import Foundation
import Testing
import TestSupport

/// `JobProcess.Running`'s two waits, the blocking `wait` and the suspending `finished`: both report the exit code a
/// shell would (128 + the signal for a process a signal ended), both kill a process that outlives its timeout, and
/// awaited processes hold no thread of the cooperative pool while they run.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct JobProcessWaitTests {
    static let env = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]

    static func shell(_ script: String, stdin: String? = nil) throws -> JobProcess.Running {
        try JobProcess.start(executable: "/bin/sh", ["-c", script], environment: env, stdin: stdin)
    }

    /// A child of the test process may inherit a blocked SIGTERM: this one unblocks it, then signals itself.
    static func signalling(_ signal: Int32) throws -> JobProcess.Running {
        try JobProcess.start(executable: PeerProcess.python, ["-c", "import os, signal; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.kill(os.getpid(), \(signal))"],
                             environment: env)
    }

    /// This process's descriptors open on a finished child's output file (deleted once collected).
    static func descriptorsOnCollectedOutput() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)) ?? ""
            return target.contains("/jobproc-") && target.hasSuffix("(deleted)")
        }.count
    }

    @Test func aFinishedChildLeavesNoDescriptorOpenInTheTestProcess() throws {
        var children: [JobProcess.Running] = []
        for n in 0..<30 {
            let child = try Self.shell("echo \(n)")
            #expect(try child.wait(timeout: 20).stdout == "\(n)\n")
            children.append(child)
        }
        // The children are still referenced, as a test that keeps them does; their output files are collected and
        // deleted, and no descriptor on them is left (other tests of this process may be starting one right now).
        #expect(Self.descriptorsOnCollectedOutput() < 4, "\(Self.descriptorsOnCollectedOutput()) descriptors still open on collected output")
        _ = children
    }

    @Test func bothWaitsReportTheExitCodeAndTheOutput() async throws {
        let blocking = try Self.shell("read line; echo \"out $line\"; echo err >&2; exit 7", stdin: "given\n").wait(timeout: 20)
        #expect(blocking.exitCode == 7 && blocking.stdout == "out given\n" && blocking.stderr == "err\n", "\(blocking)")
        let awaited = try await Self.shell("read line; echo \"out $line\"; echo err >&2; exit 7", stdin: "given\n").finished(timeout: 20)
        #expect(awaited.exitCode == 7 && awaited.stdout == "out given\n" && awaited.stderr == "err\n", "\(awaited)")
        #expect(try await Self.shell("exit 0").finished(timeout: 20).exitCode == 0)
    }

    @Test func bothWaitsReportAProcessASignalEndedAs128PlusTheSignal() async throws {
        #expect(try Self.signalling(SIGTERM).wait(timeout: 20).exitCode == 128 + SIGTERM)
        #expect(try await Self.signalling(SIGTERM).finished(timeout: 20).exitCode == 128 + SIGTERM)
        let killed = try Self.shell("exec sleep 30")
        killed.signal(SIGKILL)
        #expect(try await killed.finished(timeout: 20).exitCode == 128 + SIGKILL)
    }

    @Test func bothWaitsKillAProcessThatOutlivesTheirTimeoutAndThrow() async throws {
        let started = Date()
        let blocking = try Self.shell("exec sleep 30")
        #expect(throws: TestFailure.self) { try blocking.wait(timeout: 0.3) }
        #expect(!blocking.process.isRunning)
        let awaited = try Self.shell("exec sleep 30")
        await #expect(throws: TestFailure.self) { try await awaited.finished(timeout: 0.3) }
        #expect(!awaited.process.isRunning)
        #expect(Date().timeIntervalSince(started) < 10, "killed at the timeout, not waited out")
    }

    /// Six one-second children per pool thread, each started and awaited by a task of its own, take about a
    /// second together; waits that held their thread would take six.
    @Test func awaitedChildrenHoldNoPoolThreadWhileTheyRun() async throws {
        let count = 6 * ProcessInfo.processInfo.activeProcessorCount
        let started = Date()
        let codes = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<count { group.addTask { try await Self.shell("sleep 1").finished(timeout: 30).exitCode } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(codes == Array(repeating: 0, count: count))
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 3, "\(count) one-second children took \(elapsed) s")
    }
}
