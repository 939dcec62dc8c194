import Cryptography
import Foundation
import Testing
import TestSupport
@testable import TokenPool

/// docs/protocols/jwt-pool.md §3: the token for epoch day `d` sits in slot `d % size`, whatever day minting starts on.
@Suite(.timeLimit(.minutes(15))) struct SlotPlacementTests {
    /// Mints at `start` (noon UTC) and checks every slot of the exported pool against the native selector.
    static func checkPool(_ harness: PoolHarness, start: Date, size: Int) throws {
        let mint = try harness.pass("mint-pool", now: start)
        guard mint.exitCode == .success else { throw TestFailure("mint-pool failed: \(String(describing: mint.error))") }
        let tokens = try harness.exportedTokens()
        #expect(tokens.count == size)
        let firstDay = PoolCalendar.epochDay(unixSeconds: Int64(start.timeIntervalSince1970))
        var daysSeen = Set<Int64>()
        for (slot, token) in tokens.enumerated() {
            let claims = try DayTokenInspection(token: token, expectedIssuer: PoolHarness.didA)
            let day = PoolCalendar.epochDay(unixSeconds: claims.notBefore + 300)
            #expect(Int(day % Int64(size)) == slot, "slot \(slot) holds day \(PoolCalendar.dateString(ofDay: day))")
            #expect((firstDay..<firstDay + Int64(size)).contains(day))
            #expect(claims.notBefore == day * 86_400 - 300 && claims.expires == (day + 1) * 86_400 + 300)
            daysSeen.insert(day)
        }
        // Dense: every covered day exactly once.
        #expect(daysSeen == Set(firstDay..<firstDay + Int64(size)))
        // The native selector finds each covered day's own token.
        for day in firstDay..<firstDay + Int64(size) {
            let claims = try DayTokenInspection(token: tokens[Int(day % Int64(size))], expectedIssuer: PoolHarness.didA)
            #expect(claims.notBefore <= day * 86_400 && claims.expires >= (day + 1) * 86_400)
        }
    }

    @Test func poolsMintedOnEachDayOfTheWeekFileEveryDayInItsSlot() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "10")
        // 2027-03-01 is a Monday; seven starts cover every weekday.
        for offset in 0..<7 {
            try Self.checkPool(harness, start: instant("2027-03-01T12:00:00Z").addingTimeInterval(Double(offset) * 86_400), size: 10)
        }
    }

    @Test func poolsMintedOnEveryMonthBoundaryFileEveryDayInItsSlot() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "7")
        for month in 1...12 {
            let first = PoolCalendar.day(year: 2027, month: Int64(month), day: 1)
            // The last day of the previous month, then the first of this one; both pools straddle the boundary.
            for day in [first - 1, first] {
                try Self.checkPool(harness, start: instant(unix: day * 86_400 + 43_200), size: 7)
            }
        }
    }

    @Test func aPoolAcrossTheLeapDayHasTheTwentyNinthOfFebruaryInItsSlot() throws {
        #expect(PoolCalendar.day(year: 2028, month: 2, day: 29) == 21_243)
        #expect(PoolCalendar.dateString(ofDay: 21_243) == "2028-02-29")
        #expect(PoolCalendar.dateString(ofDay: 21_244) == "2028-03-01")
        #expect(PoolCalendar.dateString(ofDay: 20_454) == "2026-01-01")
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "5")
        for start in ["2028-02-25T00:00:00Z", "2028-02-28T23:59:59Z", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"] {
            try Self.checkPool(harness, start: instant(start), size: 5)
        }
        // A 100-day pool minted in February 2028 holds 2028-02-29 in slot 21243 % 100 = 43.
        try harness.setting("pool.size", "100")
        try Self.checkPool(harness, start: instant("2028-02-01T08:00:00Z"), size: 100)
        let tokens = try harness.exportedTokens()
        let leap = try DayTokenInspection(token: tokens[43], expectedIssuer: PoolHarness.didA)
        #expect(leap.notBefore == 21_243 * 86_400 - 300)
    }

    @Test func theSlotArithmeticMatchesTheNativeSelector() {
        let plan = PoolPlan(firstDay: 20_454, size: 100)
        for day in plan.days {
            #expect(plan.slot(forDay: day) == Int(day % 100))
            #expect(plan.day(inSlot: Int(day % 100)) == day)
        }
        #expect(plan.slot(forDay: plan.lastDay + 1) == nil)
        #expect(plan.slot(forDay: plan.firstDay - 1) == nil)
        #expect(PoolCalendar.epochDay(unixSeconds: 86_399) == 0)
        #expect(PoolCalendar.epochDay(unixSeconds: 86_400) == 1)
        #expect(PoolCalendar.epochDay(unixSeconds: -1) == -1)
        #expect(PoolCalendar.epochDay(unixMilliseconds: 86_399_999) == 0)
    }
}
