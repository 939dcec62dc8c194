import CShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to its end with `posix_spawn`: stdin and stdout on `/dev/null`, stderr shared with this process,
/// every other descriptor closed in the child, the signal mask empty and every signal at its default.
///
/// Foundation's `Process.run()` closes the child's other descriptors by listing `/proc/self/fd`, and the toolchain's
/// Foundation copies each directory entry's whole 256-byte `d_name` out of `readdir`'s buffer: with a thousand or
/// more descriptors open (serve-relay with its connections) the copy can run past the buffer's mapped end and the
/// process dies of SIGSEGV. `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34) closes them in the child without
/// reading anything, and the child never inherits a connection or the listening socket.
package enum ChildProcess {
    /// How the child ended.
    package enum Ending: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Why the child could not be started (`posix_spawn`'s error number) or its end could not be learnt (`waitpid`'s:
    /// ECHILD when something else in this process reaped it).
    package struct SpawnFailure: Error, Equatable {
        package enum Step: Equatable, Sendable { case spawn, wait }
        package let step: Step
        package let code: Int32

        package init(_ step: Step, code: Int32) {
            self.step = step
            self.code = code
        }
    }

    /// Starts `executable` with `arguments` (after its own path as `argv[0]`) and `environment`, and waits for it.
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws(SpawnFailure) -> Ending {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        shim_spawn_file_actions_addclosefrom(&actions, 3)
        // A thread of this process may block SIGTERM (the serve commands wait for it with sigwait): the child starts
        // with nothing blocked and every handler at its default, as from a shell.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let started = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard started == 0 else { throw SpawnFailure(.spawn, code: started) }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
        // Not reaped here: the child's end is unknown, and reporting an exit code would be a guess.
        guard reaped == pid else { throw SpawnFailure(.wait, code: errno) }
        // <sys/wait.h>: WIFEXITED is a low 7-bit status of 0, WEXITSTATUS the next byte, WTERMSIG the low 7 bits.
        let low = status & 0x7f
        return low == 0 ? .exited((status >> 8) & 0xff) : .signalled(low)
    }
}
