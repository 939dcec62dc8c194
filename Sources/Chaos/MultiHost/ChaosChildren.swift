import Foundation
import Synchronization

/// The long-running children of a multi-process chaos run (`serve-relay`s, `send-wakeups` passes), so a killer
/// thread can SIGKILL a random live one while their owner threads wait for them.
///
/// A child stays listed until its owner has seen it end but before the owner reaps it (`waitid` with `WNOWAIT`),
/// and kills are sent under the same lock: a SIGKILL can never reach a reaped pid that the system gave to
/// another process.
final class ChaosChildren: Sendable {
    /// What a child is, for picking victims and counting kills.
    enum Role: String, Sendable, CaseIterable { case serveRelay = "serve-relay", sendWakeups = "send-wakeups" }

    private let live = Mutex<[pid_t: Role]>([:])

    /// Spawns `command` (stdout and stderr to `outputFile`) and lists it as `role`.
    func spawn(_ role: Role, _ command: [String], environment: [String: String], outputFile: String?) throws -> pid_t {
        try live.withLock { live in
            let pid = try ProgramSpawn.start(command, directory: "/", environment: environment, outputFile: outputFile)
            live[pid] = role
            return pid
        }
    }

    /// Waits until `pid` ends, unlists it, reaps it and returns its exit status (128 + signal when signalled).
    func wait(_ pid: pid_t) -> Int32 {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        live.withLock { live in _ = live.removeValue(forKey: pid) }
        return ProgramSpawn.wait(pid)
    }

    /// Sends `signal` to `pid` if it is still listed; whether it was.
    @discardableResult
    func signal(_ pid: pid_t, _ signal: Int32) -> Bool {
        live.withLock { live in
            guard live[pid] != nil else { return false }
            kill(pid, signal)
            return true
        }
    }

    /// One live child of `role` chosen with `random`, none of `excluded`; nil when none is running.
    func pick(_ role: Role, using random: inout ChaosRandom, excluding excluded: Set<pid_t> = []) -> pid_t? {
        live.withLock { live in live.filter { $0.value == role && !excluded.contains($0.key) }.keys.sorted().randomElement(using: &random) }
    }

    /// The live children of `role`, in pid order.
    func running(_ role: Role) -> [pid_t] {
        live.withLock { live in live.filter { $0.value == role }.keys.sorted() }
    }
}

/// A flag threads share (stop, keep killing).
final class ChaosFlag: Sendable {
    private let value: Atomic<Bool>
    init(_ initial: Bool) { value = Atomic(initial) }
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set(_ newValue: Bool) { value.store(newValue, ordering: .releasing) }
}
