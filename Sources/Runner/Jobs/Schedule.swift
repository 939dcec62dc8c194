/// When a job runs by default: a systemd `OnCalendar=` expression and the same schedule as a cron line.
package struct Schedule: Sendable, Equatable {
    /// systemd calendar expression, always in UTC (`*-*-* *:00/15:00 UTC`).
    package let onCalendar: String
    /// The five cron fields for the same times (`*/15 * * * *`).
    package let cron: String
    /// Spread for `RandomizedDelaySec=` so many hosts do not fire together.
    package let randomizedDelaySeconds: Int

    package init(onCalendar: String, cron: String, randomizedDelaySeconds: Int) {
        self.onCalendar = onCalendar
        self.cron = cron
        self.randomizedDelaySeconds = randomizedDelaySeconds
    }

    /// Every `minutes` minutes (1–30, dividing 60).
    package static func every(minutes: Int, randomizedDelaySeconds: Int = 30) -> Schedule {
        precondition(minutes >= 1 && minutes <= 30 && 60 % minutes == 0)
        // Spelled out with UTC: systemd reads an expression without a time zone in local time.
        return Schedule(onCalendar: "*-*-* *:00/\(minutes):00 UTC", cron: minutes == 1 ? "* * * * *" : "*/\(minutes) * * * *", randomizedDelaySeconds: randomizedDelaySeconds)
    }

    /// Once an hour at `minute`.
    package static func hourly(atMinute minute: Int = 0, randomizedDelaySeconds: Int = 300) -> Schedule {
        Schedule(onCalendar: "*-*-* *:\(twoDigits(minute)):00 UTC", cron: "\(minute) * * * *", randomizedDelaySeconds: randomizedDelaySeconds)
    }

    /// Once a day at `hour:minute` UTC.
    package static func daily(hour: Int, minute: Int = 0, randomizedDelaySeconds: Int = 900) -> Schedule {
        Schedule(onCalendar: "*-*-* \(twoDigits(hour)):\(twoDigits(minute)):00 UTC", cron: "\(minute) \(hour) * * *", randomizedDelaySeconds: randomizedDelaySeconds)
    }

    private static func twoDigits(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}
