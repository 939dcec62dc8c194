import Foundation
import Runner

/// Starts a `send-wakeups` pass as soon as a trigger makes a push due, instead of waiting for the next
/// minute's timer. Requests arriving during a pass are coalesced into one more pass after it; a push due later
/// (the 30 s debounce window) is started when its window ends. The pass's own lease keeps it single across
/// every `serve-relay` process and the timer.
final class WakeupKicker: @unchecked Sendable {
    private let launch: @Sendable () -> Void
    private let clock: Clock
    private let condition = NSCondition()
    /// Earliest wanted pass, on the monotonic clock (seconds).
    private var wanted: TimeInterval?
    private var stopped = false
    private var thread: Thread?

    init(clock: Clock, launch: @escaping @Sendable () -> Void) {
        self.clock = clock
        self.launch = launch
    }

    /// A push becomes due at `dueAt` (Unix ms on the injected clock).
    func request(dueAt: Int64) {
        let delay = max(0, Double(dueAt - clock.now().unixMilliseconds) / 1000)
        let at = ProcessInfo.processInfo.systemUptime + delay
        condition.lock()
        if wanted == nil || at < wanted! { wanted = at }
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
            guard let at = wanted else {
                condition.wait()
                continue
            }
            let now = ProcessInfo.processInfo.systemUptime
            if at > now {
                _ = condition.wait(until: Date(timeIntervalSinceNow: at - now))
                continue
            }
            wanted = nil
            condition.unlock()
            launch()
            condition.lock()
        }
        condition.unlock()
    }
}
