import Elapsed
import Foundation

/// Shows "rows done / total, rate" on stderr for passes longer than about two seconds, on a TTY only.
///
/// `JOB_PROGRESS_DELAY_MS` changes how long a pass runs before progress shows (default 2000).
final class ProgressReporter {
    private let clock: MonotonicClock
    private let started: MonotonicInstant
    private var lastShown: MonotonicInstant?
    private let delay: TimeInterval
    private let write: (String) -> Void

    init(delay: TimeInterval = 2, clock: MonotonicClock = .system, write: @escaping (String) -> Void) {
        self.clock = clock
        self.started = clock.now()
        self.delay = delay
        self.write = write
    }

    /// A reporter for this process, or nil when stderr is not a terminal or output is JSON.
    static func forTerminal(json: Bool, environment: [String: String], clock: MonotonicClock) -> ProgressReporter? {
        guard !json, isatty(STDERR_FILENO) == 1 else { return nil }
        let delay = environment["JOB_PROGRESS_DELAY_MS"].flatMap(Int.init).map { Double(max(0, $0)) / 1000 } ?? 2
        return ProgressReporter(delay: delay, clock: clock) { FileHandle.standardError.write(Data($0.utf8)) }
    }

    func report(done: Int, total: Int?) {
        let now = clock.now()
        let elapsed = now - started
        guard elapsed >= delay else { return }
        if let lastShown, now - lastShown < 0.5 { return }
        lastShown = now
        let rate = Int(Double(done) / max(elapsed, 0.001))
        let of = total.map { " / \($0)" } ?? ""
        write("\r\(done)\(of) rows, \(rate)/s   ")
    }

    func finish() {
        if lastShown != nil { write("\n") }
    }
}
