import Synchronization

/// A monotonic clock that moves only when a test says so: `clock` goes to the code under test, `advance(by:)` moves it.
///
/// Safe to read and advance from any thread. It starts at an arbitrary instant (one hour from its origin) so code
/// that subtracts a little from "now" stays in range.
package final class ManualClock: Sendable {
    private let nanoseconds = Mutex<Int64>(3_600_000_000_000)

    package init() {}

    /// The clock to pass to the code under test.
    package var clock: MonotonicClock {
        MonotonicClock { [self] in now() }
    }

    /// The current instant.
    package func now() -> MonotonicInstant {
        MonotonicInstant(nanoseconds: nanoseconds.withLock { $0 })
    }

    /// Moves the clock `seconds` forward (a negative span is refused: a monotonic clock never goes back).
    package func advance(by seconds: Double) {
        precondition(seconds >= 0, "a monotonic clock never goes back")
        nanoseconds.withLock { $0 = (MonotonicInstant(nanoseconds: $0) + seconds).nanoseconds }
    }
}
