import Foundation

/// Starts a program with posix_spawn, giving it no descriptor but stdin (/dev/null) and stdout/stderr (a file or
/// /dev/null). Foundation's `Process` is no use for `pg_ctl start`: the server it leaves behind inherits the
/// descriptor by which `Process` notices an exit, so `waitUntilExit()` never returns.
enum ProgramSpawn {
    /// Spawns `command` in `directory` with `environment`; `newSession` puts it in a session of its own (out of
    /// reach of a signal to our process group).
    static func start(_ command: [String], directory: String, environment: [String: String], outputFile: String?,
                      newSession: Bool = false) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputFile ?? "/dev/null", O_WRONLY | O_APPEND, 0)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        guard let closeFrom = GNUSpawnActions.closeFrom, let changeDirectory = GNUSpawnActions.changeDirectory else {
            throw PostgresClusterFailure("this C library lacks posix_spawn_file_actions_addclosefrom_np/addchdir_np (glibc ≥ 2.34 needed)")
        }
        _ = closeFrom(&actions, 3)
        _ = directory.withCString { changeDirectory(&actions, $0) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaultSignals = sigset_t()  // the test runner may ignore some (SIGPIPE); a program starts with none ignored
        sigemptyset(&defaultSignals)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaultSignals, signal) }
        var noMask = sigset_t()
        sigemptyset(&noMask)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setsigmask(&attributes, &noMask)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newSession { flags |= GNUSpawnActions.setsid }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let arguments = command.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in arguments + variables { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, command[0], &actions, &attributes, arguments, variables)
        guard status == 0 else { throw PostgresClusterFailure("cannot run \(command[0]): \(String(cString: strerror(status)))") }
        return pid
    }

    /// Waits for `pid` to end; its exit status, or 128 + the signal that ended it.
    static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// glibc's GNU extensions to posix_spawn, which Swift's Glibc module does not declare (they need _GNU_SOURCE):
/// looked up by name.
private enum GNUSpawnActions {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let closeFrom: CloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")
    static let changeDirectory: ChangeDirectory? = symbol("posix_spawn_file_actions_addchdir_np")
    /// POSIX_SPAWN_SETSID in glibc's spawn.h.
    static let setsid: Int32 = 0x80

    private static func symbol<T>(_ name: String) -> T? {
        guard let pointer = dlsym(nil, name) else { return nil }  // nil: RTLD_DEFAULT
        return unsafeBitCast(pointer, to: T.self)
    }
}
