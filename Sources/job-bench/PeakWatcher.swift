import Foundation
/// Follows one child's `VmHWM` until told to stop (see `SweepChildProcess`).
final class PeakWatcher: @unchecked Sendable {
    // @unchecked: `peak` and `done` are touched only under `lock`.
    private let path: String
    private let name: String
    private let lock = NSLock()
    private var peak = 0
    private var done = false
    private let stopped = DispatchSemaphore(value: 0)

    init(pid: pid_t, name: String) {
        path = "/proc/\(pid)/status"
        self.name = name
    }

    func watch() {
        defer { stopped.signal() }
        while !lock.withLock({ done }) {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                let lines = text.split(separator: "\n")
                // Before exec the child still runs on the parent's memory: only its own image counts.
                if lines.first == "Name:\t\(name)" || lines.first?.hasSuffix("\t" + name) == true,
                   let line = lines.first(where: { $0.hasPrefix("VmHWM:") }),
                   let kib = Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") {
                    lock.withLock { peak = max(peak, kib) }
                }
            }
            usleep(2_000)
        }
    }

    /// Stops watching; the highest `VmHWM` seen (0 when the child ended before one was read).
    func finish() -> Int {
        lock.withLock { done = true }
        stopped.wait()
        return lock.withLock { peak }
    }
}
