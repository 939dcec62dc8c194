import Foundation

/// Where domain code reads "now" from: the system clock, or a fixed instant given with `--now` / `JOB_NOW`.
///
/// Domain decisions (expiry, slots, debounce, retention) read this clock, never `Date()`, so testers can run
/// any day's background work. Leases, durations and the ledger use the real clock.
public struct Clock: Sendable {
    private let fixed: Date?

    /// The system clock.
    public static let system = Clock(fixed: nil)

    /// A clock frozen at `instant` for the whole process.
    public static func fixed(_ instant: Date) -> Clock { Clock(fixed: instant) }

    /// The current instant.
    public func now() -> Date { fixed ?? Date() }

    /// True when the clock is emulated.
    public var isEmulated: Bool { fixed != nil }

    /// Parses `--now`: RFC 3339 (`2026-03-01T00:00:00Z`, fractional seconds and offsets allowed) or `@<unix seconds>`.
    public static func parse(_ text: String) -> Date? {
        if text.hasPrefix("@") {
            guard let seconds = Double(text.dropFirst()), seconds.isFinite else { return nil }
            return Date(timeIntervalSince1970: seconds)
        }
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}

extension Date {
    /// Unix epoch milliseconds, the unit of every `_at` column (DESIGN §4).
    public var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The instant `milliseconds` after the Unix epoch.
    public init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// RFC 3339 in UTC with milliseconds, as output shows times.
    public var rfc3339: String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: self)
    }
}
