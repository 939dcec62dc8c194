import Elapsed
import Foundation
import TestSupport
import Testing

@Suite(.timeLimit(.minutes(15)))
struct MonotonicClockTests {
    @Test func systemClockNeverGoesBackAndCountsRealTime() {
        let clock = MonotonicClock.system
        let start = clock.now()
        usleep(20_000)
        let later = clock.now()
        #expect(later > start)
        #expect(later - start >= 0.019)
        #expect(clock.seconds(since: start) >= later - start)
    }

    @Test func manualClockMovesOnlyWhenAdvanced() {
        let manual = ManualClock()
        let clock = manual.clock
        let start = clock.now()
        usleep(5_000)
        #expect(clock.now() == start)
        manual.advance(by: 1.5)
        #expect(clock.seconds(since: start) == 1.5)
        #expect(manual.now() == clock.now())
    }

    @Test func deadlineHasPassedOnceTheClockReachesIt() {
        let manual = ManualClock()
        let deadline = manual.clock.deadline(in: 2)
        #expect(!manual.clock.hasPassed(deadline))
        manual.advance(by: 1.999)
        #expect(!manual.clock.hasPassed(deadline))
        manual.advance(by: 0.001)
        #expect(manual.clock.hasPassed(deadline))
    }

    @Test func instantArithmeticSaturatesInsteadOfOverflowing() {
        let instant = MonotonicInstant(nanoseconds: 1_000)
        #expect((instant + .infinity).nanoseconds == .max)
        #expect((instant + 1e300).nanoseconds == .max)
        #expect((instant + -1e300).nanoseconds == .min)
        #expect((instant + 0.000_000_5).nanoseconds == 1_500)
        #expect(MonotonicInstant(nanoseconds: 500_000_000) - MonotonicInstant(nanoseconds: 1_500_000_000) == -1)
    }

    @Test func wakeDateIsTheMonotonicTimeLeftCappedAndNeverInThePast() {
        let manual = ManualClock()
        let clock = manual.clock
        let deadline = clock.deadline(in: 30)
        let before = Date()
        let wake = clock.wakeDate(for: deadline, atMost: 0.25)
        #expect(wake.timeIntervalSince(before) >= 0.25 - 0.001 && wake.timeIntervalSince(before) < 1)
        let far = clock.wakeDate(for: deadline).timeIntervalSince(before)
        #expect(far >= 29.9 && far < 31)
        manual.advance(by: 60)
        let overdue = clock.wakeDate(for: deadline).timeIntervalSince(Date())
        #expect(overdue <= 0.001)
    }
}
