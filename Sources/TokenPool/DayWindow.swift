/// The validity window of the token for one UTC day: `nbf = opening − slack`, `exp = closing + slack` (docs/protocols/jwt-pool.md §2).
///
/// The slack (`BACKGROUND_JWT_WINDOW_SLACK_SECONDS`, setting `pool.slack-seconds`) widens both ends for clock
/// skew between the device and Endorser. Widening is safe; narrowing could leave a prefetch inside its day with
/// no usable token. Both slacks together are below half a day, so a window never reaches another day's midnight-to-midnight.
package struct DayWindow: Sendable, Equatable {
    /// The epoch day the token grants.
    package let day: Int64
    /// `nbf`, Unix seconds.
    package let notBefore: Int64
    /// `exp`, Unix seconds.
    package let expires: Int64

    /// Largest accepted slack: both ends together stay below half a day, so one token is valid for less than
    /// 36 hours (43,199 s on each end made it valid for 48) and neighbouring days' windows overlap only in their slack.
    package static let maximumSlackSeconds = 21_599

    /// The longest window a pool token may have: a day plus the maximum slack on each end.
    package static let maximumWidthSeconds: Int64 = 86_400 + 2 * Int64(maximumSlackSeconds)

    package init(day: Int64, slackSeconds: Int) {
        precondition((0...Self.maximumSlackSeconds).contains(slackSeconds), "slack out of range")
        self.day = day
        notBefore = PoolCalendar.opening(of: day) - Int64(slackSeconds)
        expires = PoolCalendar.closing(of: day) + Int64(slackSeconds)
    }

    package init(day: Int64, notBefore: Int64, expires: Int64) {
        self.day = day
        self.notBefore = notBefore
        self.expires = expires
    }

    /// Whether the window covers all of its day, from the opening midnight to the closing midnight.
    package var coversItsDay: Bool {
        notBefore <= PoolCalendar.opening(of: day) && expires >= PoolCalendar.closing(of: day)
    }

    /// Whether `unixSeconds` lies in `[nbf, exp)`.
    package func contains(unixSeconds: Int64) -> Bool { notBefore <= unixSeconds && unixSeconds < expires }
}
