import CivilDate
import Foundation

/// Where domain code reads "now" from: the system clock, or a fixed instant given with `--now` / `JOB_NOW`.
///
/// Domain decisions (expiry, slots, debounce, retention) read this clock, never `Date()`, so testers can run
/// any day's background work, and so does the run ledger (its times and its pruning). Lease stamps use the real
/// wall clock; durations, deadlines and intervals use `MonotonicClock` (docs/design.md §2, "Clocks").
package struct Clock: Sendable {
    private let fixed: Date?

    /// The system clock.
    package static let system = Clock(fixed: nil)

    /// A clock frozen at `instant` for the whole process.
    package static func fixed(_ instant: Date) -> Clock { Clock(fixed: instant) }

    /// The current instant.
    package func now() -> Date { fixed ?? Date() }

    /// True when the clock is emulated.
    package var isEmulated: Bool { fixed != nil }

    /// The instants `--now` may name: 1970-01-01T00:00:00Z up to 9999-12-31T23:59:59Z, the years RFC 3339 can write.
    /// Anything outside would overflow the millisecond arithmetic of domain code mid-pass, so it is refused up front.
    package static let emulatedRange: ClosedRange<Double> = 0...253_402_300_799.999

    /// Parses `--now` strictly: RFC 3339 `date-time` exactly (RFC 3339 §5.6: fractional seconds, `Z` or `±hh:mm`,
    /// leap second `:60` allowed) or `@<unix seconds>` in decimal digits with an optional fraction; nil for
    /// anything else, including impossible dates (`2026-02-30`, `T24:00`), trailing text and instants outside
    /// `emulatedRange`.
    package static func parse(_ text: String) -> Date? {
        let seconds: Double?
        if text.hasPrefix("@") { seconds = parseUnixSeconds(Array(text.utf8.dropFirst())) } else { seconds = RFC3339.seconds(Array(text.utf8)) }
        guard let seconds, emulatedRange.contains(seconds) else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// `digits ["." digits]`, nothing else (no sign, hex, exponent or spaces).
    static func parseUnixSeconds(_ bytes: [UInt8]) -> Double? {
        var scanner = RFC3339.Scanner(bytes: bytes)
        guard let whole = scanner.digits(atMost: 12, atLeast: 1) else { return nil }
        var value = Double(whole)
        if scanner.take(UInt8(ascii: ".")) {
            guard let fraction = scanner.fraction() else { return nil }
            value += fraction
        }
        return scanner.atEnd ? value : nil
    }
}

/// The RFC 3339 §5.6 `date-time` grammar, checked field by field.
enum RFC3339 {
    /// Seconds since the Unix epoch for a valid `date-time`, else nil.
    static func seconds(_ bytes: [UInt8]) -> Double? {
        var s = Scanner(bytes: bytes)
        guard let year = s.digits(exactly: 4), s.take(UInt8(ascii: "-")),
              let month = s.digits(exactly: 2), s.take(UInt8(ascii: "-")),
              let day = s.digits(exactly: 2), (1...12).contains(month), (1...CivilDate.daysIn(month: month, year: year)).contains(day),
              s.take(UInt8(ascii: "T")) || s.take(UInt8(ascii: "t")),
              let hour = s.digits(exactly: 2), s.take(UInt8(ascii: ":")),
              let minute = s.digits(exactly: 2), s.take(UInt8(ascii: ":")),
              let second = s.digits(exactly: 2), hour <= 23, minute <= 59, second <= 60 else { return nil }
        var fraction = 0.0
        if s.take(UInt8(ascii: ".")) {
            guard let value = s.fraction() else { return nil }
            fraction = value
        }
        var offset = 0
        if s.take(UInt8(ascii: "Z")) || s.take(UInt8(ascii: "z")) {
        } else {
            let sign: Int
            if s.take(UInt8(ascii: "+")) { sign = 1 } else if s.take(UInt8(ascii: "-")) { sign = -1 } else { return nil }
            guard let offsetHour = s.digits(exactly: 2), s.take(UInt8(ascii: ":")), let offsetMinute = s.digits(exactly: 2),
                  offsetHour <= 23, offsetMinute <= 59 else { return nil }
            offset = sign * (offsetHour * 3600 + offsetMinute * 60)
        }
        guard s.atEnd else { return nil }
        // A leap second (23:59:60) is the instant just after :59; POSIX time has no slot of its own for it.
        let days = CivilDate.days(year: year, month: month, day: day)
        let whole = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Double(whole) + fraction
    }

    /// A cursor over ASCII bytes.
    struct Scanner {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func digits(exactly count: Int) -> Int? { digits(atMost: count, atLeast: count) }

        /// A run of `atLeast`…`atMost` ASCII digits as a number (longer runs are refused).
        mutating func digits(atMost: Int, atLeast: Int) -> Int? {
            var value = 0
            var taken = 0
            while index < bytes.count, (48...57).contains(bytes[index]) {
                guard taken < atMost else { return nil }
                value = value * 10 + Int(bytes[index] - 48)
                index += 1
                taken += 1
            }
            return taken >= atLeast ? value : nil
        }

        /// One or more digits after a decimal point, as a fraction of one.
        mutating func fraction() -> Double? {
            var value = 0.0
            var scale = 0.1
            var taken = 0
            while index < bytes.count, (48...57).contains(bytes[index]) {
                value += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
                taken += 1
            }
            return taken > 0 ? value : nil
        }
    }
}

extension Date {
    /// Unix epoch milliseconds, the unit of every `_at` column (docs/design.md §4).
    package var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The instant `milliseconds` after the Unix epoch.
    package init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// RFC 3339 in UTC with milliseconds (rounded to the nearest), as output shows times: `2026-11-30T20:35:28.037Z`.
    ///
    /// Formatted by hand, byte for byte what `ISO8601DateFormatter` with fractional seconds prints: that formatter
    /// builds an ICU date formatter per call, a tenth of `serve-link`'s CPU when every log line carries a time.
    package var rfc3339: String { rfc3339(milliseconds: true) }

    /// RFC 3339 in UTC to the whole second (`2026-07-12T10:00:00Z`), the milliseconds dropped.
    package var rfc3339Seconds: String { rfc3339(milliseconds: false) }

    private func rfc3339(milliseconds: Bool) -> String {
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
            + "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2))" + (milliseconds ? ".\(padded(millis, 3))Z" : "Z")
    }
}
