import Elapsed
import Foundation
import Testing
import TestSupport
@testable import Grants

/// serve-link's idle time (what `--idle-exit` waits for) on the injected monotonic clock, moved by the test.
@Suite(.timeLimit(.minutes(15))) struct LinkSlotsIdleTests {
    @Test func idleTimeCountsFromTheLastConnectionEndOnTheMonotonicClock() {
        let manual = ManualClock()
        let slots = LinkSlots(maxTotal: 4, maxPerSource: 2, clock: manual.clock)
        manual.advance(by: 30)
        #expect(slots.idleSeconds == 30, "idle since the table was made")
        let source = LinkSource(sockaddr_storage())
        #expect(slots.take(source) == .admitted)
        manual.advance(by: 100)
        #expect(slots.idleSeconds == nil, "not idle while a connection is open")
        slots.release(source)
        #expect(slots.idleSeconds == 0)
        manual.advance(by: 12.5)
        #expect(slots.idleSeconds == 12.5)
    }
}
