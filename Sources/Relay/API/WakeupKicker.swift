import Elapsed
import Foundation
import Runner

/// Starts a `send-wakeups` pass as soon as a trigger makes a push due, instead of waiting for the next
/// minute's timer. Requests arriving during a pass are coalesced into one more pass after it; a push due later
/// (the 30 s debounce window) gets a pass when its window ends, whatever passes ran before. The pass's own
/// lease keeps it single across every `serve-relay` process and the timer.
// @unchecked: `wanted` and `stopped` are touched only while `condition` is locked; `thread` is set once by `start()`, on the owner's thread, before the loop runs; the rest is immutable and Sendable.
final class WakeupKicker: @unchecked Sendable {
    private let launch: @Sendable () -> Void
    private let clock: Clock
    /// The clock the wanted passes are timed on.
    private let elapsed: MonotonicClock
    private let condition = NSCondition()
    /// Wanted passes, on the monotonic clock; deferred ones rounded up to 100 ms so a burst shares one entry. A pass
    /// started at T covers every entry due by T; later ones stay (a push deferred by the debounce window).
    private var wanted = Set<MonotonicInstant>()
    private var stopped = false
    private var thread: Thread?
    /// More distinct deadlines than this collapse into the earliest (the minute timer remains the backstop).
    static let maxPending = 4096

    init(clock: Clock, elapsed: MonotonicClock = .system, launch: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.elapsed = elapsed
        self.launch = launch
    }

    /// A push becomes due at `dueAt` (Unix ms on the injected clock).
    func request(dueAt: Int64) {
        let delay = max(0, Double(dueAt - clock.now().unixMilliseconds) / 1000)
        let now = elapsed.now()
        let tenth: Int64 = 100_000_000
        let later = (now + delay).nanoseconds
        let at = delay == 0 ? now : MonotonicInstant(nanoseconds: (later / tenth + (later % tenth > 0 ? 1 : 0)) * tenth)
        condition.lock()
        if wanted.count < Self.maxPending || at <= (wanted.min() ?? at) { wanted.insert(at) }
        condition.signal()
        condition.unlock()
    }

    func start() {
        let thread = Thread { [self] in loop() }
        thread.name = "wakeup-kicker"
        self.thread = thread
        thread.start()
    }

    /// Stops after the pass in progress, if any.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        while !stopped {
            guard let at = wanted.min() else {
                condition.wait()
                continue
            }
            let now = elapsed.now()
            if at > now {
                _ = condition.wait(until: elapsed.wakeDate(for: at, atMost: 1))
                continue
            }
            wanted = wanted.filter { $0 > now }
            condition.unlock()
            launch()
            condition.lock()
        }
        condition.unlock()
    }
}
