import CivilDate
import Foundation

/// The `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date.
package enum RetryAfter {
    /// Seconds to wait from `now`, or `nil` when `value` is neither form.
    ///
    /// - delta-seconds: `120` → 120. A negative number (`-5`, not valid per the RFC but seen) → 0.
    /// - HTTP-date in all three forms RFC 9110 §5.6.7 requires recipients to accept, always GMT:
    ///   IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, obsolete RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`
    ///   (a two-digit year more than 50 years ahead of `now` is taken as the previous century), and
    ///   asctime `Sun Nov  6 08:49:37 1994`. A date at or before `now` → 0. The weekday name must be a
    ///   valid name but is not checked against the date.
    package static func parse(_ value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        if let seconds = parseDeltaSeconds(text) { return seconds }
        guard let date = parseHTTPDate(text, now: now) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    static func parseDeltaSeconds(_ text: String) -> TimeInterval? {
        var digits = Substring(text)
        let negative = digits.first == "-"
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        if negative { return 0 }
        // Arbitrarily long digit strings are valid; saturate instead of overflowing.
        return Double(digits).map { min($0, Double(Int32.max)) }
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// Parses an HTTP-date (any of the three forms) as a UTC instant.
    package static func parseHTTPDate(_ text: String, now: Date) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true).map { String($0) }
        if parts.count == 6, parts[0].hasSuffix(","), shortDays.contains(parts[0].dropLast().lowercased()), parts[5] == "GMT" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            guard parts[1].count == 2, let day = Int(parts[1]), let month = month(parts[2]),
                  parts[3].count == 4, let year = Int(parts[3]) else { return nil }
            return instant(year: year, month: month, day: day, time: parts[4])
        }
        if parts.count == 4, parts[0].hasSuffix(","), longDays.contains(parts[0].dropLast().lowercased()), parts[3] == "GMT" {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false).map { String($0) }
            guard date.count == 3, date[0].count == 2, let day = Int(date[0]), let month = month(date[1]),
                  date[2].count == 2, let twoDigitYear = Int(date[2]) else { return nil }
            let currentYear = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: now).year ?? 1970
            var year = (currentYear / 100) * 100 + twoDigitYear
            if year > currentYear + 50 { year -= 100 }
            return instant(year: year, month: month, day: day, time: parts[2])
        }
        if parts.count == 5, shortDays.contains(parts[0].lowercased()) {
            // asctime: Sun Nov  6 08:49:37 1994
            guard let month = month(parts[1]), (1...2).contains(parts[2].count), let day = Int(parts[2]),
                  parts[4].count == 4, let year = Int(parts[4]) else { return nil }
            return instant(year: year, month: month, day: day, time: parts[3])
        }
        return nil
    }

    private static func month(_ name: String) -> Int? {
        guard name.count == 3, let index = months.firstIndex(of: name.lowercased()) else { return nil }
        return index + 1
    }

    private static func instant(year: Int, month: Int, day: Int, time: String) -> Date? {
        let fields = time.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, fields.allSatisfy({ $0.count == 2 && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
              let hour = Int(fields[0]), let minute = Int(fields[1]), let second = Int(fields[2]),
              hour < 24, minute < 60, second <= 60 else { return nil }
        guard year >= 1, (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year) else { return nil }
        let seconds = CivilDate.days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
