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

    /// RFC 3339 in UTC with milliseconds (rounded to the nearest), as output shows times: `2026-11-30T20:35:28.037Z`.
    ///
    /// Formatted by hand, byte for byte what `ISO8601DateFormatter` with fractional seconds prints: that formatter
    /// builds an ICU date formatter per call, a tenth of `serve-link`'s CPU when every log line carries a time.
    public var rfc3339: String {
        let total = Int64((timeIntervalSince1970 * 1000).rounded())
        var whole = time_t(total >= 0 ? total / 1000 : (total - 999) / 1000)
        let millis = Int32(total - Int64(whole) * 1000)
        var parts = tm()
        gmtime_r(&whole, &parts)
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))T"
            + "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2)).\(padded(millis, 3))Z"
    }
}
