import Foundation
import Testing
import TestSupport
@testable import Runner
#if canImport(Glibc)
import Glibc
#endif

/// `ChildProcess` starts a program as from a shell: its exit or signal reported, nothing of this process's
/// descriptors or signal mask passed on, and still working with thousands of descriptors open.
@Suite(.timeLimit(.minutes(5))) struct ChildProcessTests {
    let folder = TemporaryDirectory()

    /// Runs `script` with `/bin/sh -c`.
    func shell(_ script: String) throws -> ChildProcess.Ending {
        try ChildProcess.run("/bin/sh", ["-c", script], environment: ["PATH": "/usr/bin:/bin"])
    }

    @Test func aChildThatExitsReportsItsExitCode() throws {
        #expect(try shell("exit 0") == .exited(0))
        #expect(try shell("exit 75") == .exited(75))
    }

    @Test func aChildKilledByASignalReportsTheSignal() throws {
        #expect(try shell("kill -TERM $$") == .signalled(SIGTERM))
        #expect(try shell("kill -KILL $$") == .signalled(SIGKILL))
    }

    @Test func aProgramThatDoesNotExistIsASpawnFailureNamingENOENT() {
        #expect(throws: ChildProcess.SpawnFailure(.spawn, code: ENOENT)) {
            try ChildProcess.run(folder.path + "/no-such-program", [], environment: [:])
        }
    }

    @Test func theChildGetsTheEnvironmentItWasGivenAndNothingElse() throws {
        let out = folder.path + "/env"
        setenv("CHILD_PROCESS_TEST_PARENT_ONLY", "1", 1)
        defer { unsetenv("CHILD_PROCESS_TEST_PARENT_ONLY") }
        // The child's stdout is /dev/null: the shell writes the environment to a file.
        #expect(try ChildProcess.run("/bin/sh", ["-c", "env > \(out)"], environment: ["GIVEN": "yes"]) == .exited(0))
        let lines = Set(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map(String.init))
        #expect(lines.contains("GIVEN=yes"))
        #expect(!lines.contains { $0.hasPrefix("CHILD_PROCESS_TEST_PARENT_ONLY=") })
    }

    @Test func theChildInheritsNoDescriptorBeyondStandardInputOutputAndError() throws {
        // A descriptor without FD_CLOEXEC, as a connection accepted without it would be, placed high (200 and up) so
        // that no descriptor of the child's own can be mistaken for it.
        let directory = Glibc.open(folder.path, O_RDONLY | O_DIRECTORY)
        try #require(directory >= 0)
        let open = fcntl(directory, F_DUPFD, 200)
        close(directory)
        try #require(open >= 200)
        defer { close(open) }
        let out = folder.path + "/fds"
        #expect(try shell("ls /proc/$$/fd > \(out)") == .exited(0))
        let listed = Set(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").map { Int($0) ?? -1 })
        // Besides 0–2, `ls` reads the directory on a descriptor of its own (and a shell that forks may hold one for
        // its redirection): at most two, both low. Nothing of this process's is there.
        #expect(!listed.contains(Int(open)), "the child had \(listed.sorted())")
        #expect(listed.subtracting([0, 1, 2]).count <= 2, "the child had \(listed.sorted())")
        #expect(listed.allSatisfy { $0 >= 0 && $0 < 20 }, "the child had \(listed.sorted())")
    }

    @Test func theChildStartsWithAnEmptySignalMaskAndNoIgnoredSignalWhileThisProcessBlocksSIGTERMAndIgnoresSIGUSR2() throws {
        // SIGUSR2 is used by nothing else in the test process.
        let handler = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, handler) }
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        let out = folder.path + "/status"
        // `exec`: grep replaces the shell and reads its own status, the started process's. Read by a grep the shell
        // forked, /proc/$$/status would show the shell's own mask, which dash fills while it forks.
        #expect(try shell("exec grep -E '^Sig(Blk|Ign):' /proc/self/status > \(out)") == .exited(0))
        let status = try String(contentsOfFile: out, encoding: .utf8)
        #expect(status.contains("SigBlk:\t0000000000000000"), "\(status)")
        // Signals 32 and 33 are glibc's own (thread cancellation and set*id); sigfillset leaves them out and every
        // program's libc sets them up anew. Every other signal is at its default: none ignored.
        let ignored = status.split(separator: "\n").first { $0.hasPrefix("SigIgn:") }.flatMap { UInt64($0.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) }
        #expect(ignored.map { $0 & ~UInt64(0x1_8000_0000) } == 0, "\(status)")
    }

    @Test func aChildStartsWhileThisProcessHoldsAThousandAndMoreDescriptors() throws {
        // Foundation's Process could crash past about a thousand (ChildProcess says why); this one reads nothing.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let wanted = min(1_500, Int(limit.rlim_cur) - 64)
        try #require(wanted > 1_000, "RLIMIT_NOFILE is \(limit.rlim_cur)")
        var extra: [Int32] = []
        defer { for fd in extra { close(fd) } }
        for _ in 0..<wanted {
            let fd = dup(2)
            if fd < 0 { break }
            extra.append(fd)
        }
        #expect(extra.count == wanted)
        let out = folder.path + "/count"
        #expect(try shell("ls /proc/$$/fd | wc -l > \(out)") == .exited(0))
        let count = Int(try String(contentsOfFile: out, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect((3...6).contains(count), "the child listed \(count) descriptors")
    }
}
