import Elapsed
import Foundation
import Runner
import Testing
@testable import Relay

/// The kicker that starts `send-wakeups` passes for serve-relay: an immediate push starts a pass at once, and a
/// push deferred by the debounce window still gets its own pass after passes for other pushes have run.
@Suite(.timeLimit(.minutes(15))) struct WakeupKickerTests {
    // @unchecked: `times` is read and written only while `lock` is held.
    final class Launches: @unchecked Sendable {
        private let lock = NSLock()
        private var times: [TimeInterval] = []
        func record() { lock.withLock { times.append(ProcessInfo.processInfo.systemUptime) } }
        var all: [TimeInterval] { lock.withLock { times } }
    }

    @Test func aDeferredPushKeepsItsPassWhenAnImmediateOneRunsFirst() throws {
        let launches = Launches()
        let kicker = WakeupKicker(clock: .system) { launches.record() }
        kicker.start()
        defer { kicker.stop() }
        let now = Date().unixMilliseconds
        let requested = ProcessInfo.processInfo.systemUptime
        kicker.request(dueAt: now + 700)  // a Device ID pushed 29.3 s ago: due when its window ends
        kicker.request(dueAt: now)        // another Device ID: due now
        let deadline = Date().addingTimeInterval(5)
        while launches.all.count < 2 && Date() < deadline { usleep(10_000) }
        let times = launches.all
        #expect(times.count == 2, "one pass now, one when the deferred push is due")
        if times.count == 2 { #expect(times[1] - requested >= 0.6, "the second pass waited for the deferred push") }
        usleep(300_000)
        #expect(launches.all.count == 2, "nothing more")
    }

    @Test func aPushDeferredByTheWholeDebounceWindowGetsItsPassOnceTheMonotonicClockReachesItsEnd() throws {
        let launches = Launches()
        let manual = ManualClock()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let kicker = WakeupKicker(clock: .fixed(now), elapsed: manual.clock) { launches.record() }
        kicker.start()
        defer { kicker.stop() }
        kicker.request(dueAt: now.unixMilliseconds + 30_000)  // due when its 30 s window ends
        kicker.request(dueAt: now.unixMilliseconds)           // due now
        let first = Date().addingTimeInterval(5)
        while launches.all.isEmpty && Date() < first { usleep(10_000) }
        manual.advance(by: 29.8)
        usleep(200_000)
        #expect(launches.all.count == 1, "the deferred push waits for its window")
        manual.advance(by: 0.2)
        let second = Date().addingTimeInterval(5)
        while launches.all.count < 2 && Date() < second { usleep(10_000) }
        #expect(launches.all.count == 2, "its pass starts once the window has passed on the monotonic clock")
    }

    @Test func aBurstOfImmediateRequestsDuringAPassIsCoalescedIntoOneMorePass() throws {
        let launches = Launches()
        let kicker = WakeupKicker(clock: .system) {
            launches.record()
            usleep(300_000)  // a pass takes a while
        }
        kicker.start()
        defer { kicker.stop() }
        kicker.request(dueAt: Date().unixMilliseconds)
        usleep(100_000)
        for _ in 0..<50 { kicker.request(dueAt: Date().unixMilliseconds) }
        usleep(1_200_000)
        #expect(launches.all.count == 2, "the first pass, then one pass for the whole burst")
    }
}
