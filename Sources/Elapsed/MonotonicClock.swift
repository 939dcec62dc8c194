import Foundation

/// Where elapsed time is read from: deadlines, durations, intervals and idle timers.
///
/// `.system` reads `CLOCK_BOOTTIME` (what Swift's `ContinuousClock` reads on Linux): it never steps when the wall
/// clock is set, and it keeps counting while the machine sleeps, so a lease renewal or an idle timer is not late by
/// a suspend. A test passes a `ManualClock`'s clock instead and moves time itself. Wall-clock instants that are
/// stored or shown (log times, ledger and lease stamps, metrics) stay on `Clock` and `Date` (docs/design.md,
/// "Clocks").
package struct MonotonicClock: Sendable {
    private let read: @Sendable () -> MonotonicInstant

    /// A clock reading `read` (tests: `ManualClock.clock`).
    package init(read: @escaping @Sendable () -> MonotonicInstant) {
        self.read = read
    }

    /// The system's monotonic clock.
    package static let system = MonotonicClock {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return MonotonicInstant(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }

    /// The current instant.
    package func now() -> MonotonicInstant { read() }

    /// Seconds since `start`.
    package func seconds(since start: MonotonicInstant) -> Double { now() - start }

    /// The instant `seconds` from now.
    package func deadline(in seconds: Double) -> MonotonicInstant { now() + seconds }

    /// Whether `deadline` has come.
    package func hasPassed(_ deadline: MonotonicInstant) -> Bool { now() >= deadline }

    /// The wall instant to hand a condition variable's `wait(until:)` to wake at `deadline`, or after `atMost`
    /// seconds if that is sooner. Computed at the wait from the monotonic time left, so a step of the wall clock
    /// can only shorten or lengthen one wait, never a deadline; callers loop and look at this clock again.
    package func wakeDate(for deadline: MonotonicInstant, atMost: Double = .infinity) -> Date {
        Date().addingTimeInterval(max(0, min(deadline - now(), atMost)))
    }
}
