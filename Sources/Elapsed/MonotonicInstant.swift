/// A point on a monotonic clock: nanoseconds from an arbitrary origin, meaningful only against another instant
/// of the same clock.
///
/// Subtracting two instants gives the seconds between them; adding seconds gives a deadline. Unlike a `Date`, an
/// instant never moves when the wall clock is set or stepped (docs/design.md, "Clocks").
package struct MonotonicInstant: Comparable, Hashable, Sendable {
    /// Nanoseconds from the clock's origin.
    package let nanoseconds: Int64

    package init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// An instant no clock reaches: no deadline.
    package static let distantFuture = MonotonicInstant(nanoseconds: .max)

    /// The instant `seconds` later (earlier when negative); an infinite or huge span saturates.
    package static func + (instant: MonotonicInstant, seconds: Double) -> MonotonicInstant {
        let span = (seconds * 1e9).rounded()
        guard span.isFinite, abs(span) < 9e18 else { return MonotonicInstant(nanoseconds: span > 0 ? .max : .min) }
        let (sum, overflow) = instant.nanoseconds.addingReportingOverflow(Int64(span))
        return MonotonicInstant(nanoseconds: overflow ? (span > 0 ? .max : .min) : sum)
    }

    /// Seconds from `earlier` to `later` (negative when `later` comes first).
    package static func - (later: MonotonicInstant, earlier: MonotonicInstant) -> Double {
        (Double(later.nanoseconds) - Double(earlier.nanoseconds)) / 1e9
    }

    package static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
