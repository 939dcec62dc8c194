import Foundation
import Testing
@testable import HTTPClient

@Suite(.timeLimit(.minutes(15))) struct RetryAfterTests {
    /// 1994-11-06 08:49:37 UTC, the RFC's example instant.
    let example = Date(timeIntervalSince1970: 784_111_777)

    @Test func deltaSecondsAreReturnedAsIs() {
        #expect(RetryAfter.parse("120", now: example) == 120)
        #expect(RetryAfter.parse("0", now: example) == 0)
        #expect(RetryAfter.parse(" 7 ", now: example) == 7)
    }

    @Test func negativeDeltaSecondsMeanNoWait() {
        #expect(RetryAfter.parse("-5", now: example) == 0)
    }

    @Test func hugeDeltaSecondsSaturateInsteadOfOverflowing() {
        #expect(RetryAfter.parse("99999999999999999999999", now: example) == Double(Int32.max))
    }

    @Test func anIMFFixdateGivesTheSecondsUntilIt() {
        let now = example.addingTimeInterval(-90)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 90)
    }

    @Test func anRFC850DateGivesTheSecondsUntilIt() {
        let now = example.addingTimeInterval(-30)
        #expect(RetryAfter.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: now) == 30)
    }

    @Test func anRFC850TwoDigitYearIsTakenWithinFiftyYearsOfNow() throws {
        // now = 2026-11-29; "30" → 2030, "99" → 1999 (more than 50 years ahead otherwise).
        let now = Date(timeIntervalSince1970: 1_795_910_400)
        let in2030 = try #require(RetryAfter.parseHTTPDate("Friday, 01-Mar-30 00:00:00 GMT", now: now))
        #expect(in2030 == Date(timeIntervalSince1970: 1_898_553_600))
        let in1999 = try #require(RetryAfter.parseHTTPDate("Friday, 31-Dec-99 23:59:59 GMT", now: now))
        #expect(in1999 == Date(timeIntervalSince1970: 946_684_799))
    }

    @Test func anAsctimeDateGivesTheSecondsUntilIt() {
        let now = example.addingTimeInterval(-3600)
        #expect(RetryAfter.parse("Sun Nov  6 08:49:37 1994", now: now) == 3600)
    }

    @Test func aDateInThePastMeansNoWait() {
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: example.addingTimeInterval(500)) == 0)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", now: example) == 0)
    }

    @Test func aLeapDayParsesAndAnImpossibleDayDoesNot() {
        let now = Date(timeIntervalSince1970: 0)
        #expect(RetryAfter.parseHTTPDate("Tue, 29 Feb 2028 12:00:00 GMT", now: now) == Date(timeIntervalSince1970: 1_835_438_400))
        #expect(RetryAfter.parseHTTPDate("Wed, 29 Feb 2027 12:00:00 GMT", now: now) == nil)
    }

    @Test func garbageIsRejected() {
        for value in ["", "soon", "1.5", "12abc", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 06 Nov 1994 25:00:00 GMT",
                      "Sun, 32 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                      "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov 6 08:49 1994", "--5"] {
            #expect(RetryAfter.parse(value, now: example) == nil, "\(value)")
        }
    }
}
