import CivilDate
/// UTC epoch-day arithmetic shared by the minter, the native selector and the verifier (docs/protocols/jwt-pool.md §3).
///
/// An epoch day is `floor(unixSeconds / 86400)`; day `d` runs from its opening midnight `d·86400` to its
/// closing midnight `(d+1)·86400`. The token for day `d` lives in slot `d % size`. Any `size` consecutive
/// days hit every slot exactly once, so a pool is dense whatever day minting starts on.
package enum PoolCalendar {
    /// `BACKGROUND_JWT_SECONDS_PER_DAY`: the frame each slot is cut from.
    package static let secondsPerDay: Int64 = 86_400

    /// The epoch day containing `unixSeconds` (floor division, so instants before 1970 land on negative days).
    package static func epochDay(unixSeconds: Int64) -> Int64 {
        floorDivide(unixSeconds, secondsPerDay)
    }

    /// The epoch day containing `unixMilliseconds`.
    package static func epochDay(unixMilliseconds: Int64) -> Int64 {
        epochDay(unixSeconds: floorDivide(unixMilliseconds, 1000))
    }

    /// Unix seconds of day `day`'s opening midnight.
    package static func opening(of day: Int64) -> Int64 { day * secondsPerDay }

    /// Unix seconds of day `day`'s closing midnight (the next day's opening).
    package static func closing(of day: Int64) -> Int64 { (day + 1) * secondsPerDay }

    /// The slot that holds day `day`'s token in a pool of `size`: `day % size`, as both native fetchers
    /// compute it (never negative; epoch days this program mints are never negative).
    package static func slot(forDay day: Int64, size: Int) -> Int {
        precondition(size > 0, "a pool has at least one slot")
        let s = Int64(size)
        return Int(((day % s) + s) % s)
    }

    /// `YYYY-MM-DD` of an epoch day, for reports (proleptic Gregorian, UTC).
    package static func dateString(ofDay day: Int64) -> String {
        let (year, month, dayOfMonth) = CivilDate.date(days: Int(day))
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(dayOfMonth, 2))"
    }

    /// The epoch day of a civil UTC date (inverse of `dateString`).
    package static func day(year: Int64, month: Int64, day: Int64) -> Int64 {
        Int64(CivilDate.days(year: Int(year), month: Int(month), day: Int(day)))
    }

    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
