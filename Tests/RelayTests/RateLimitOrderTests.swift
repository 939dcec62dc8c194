import Foundation
import Store
import Testing
import TestSupport
@testable import Relay

/// A Device ID's rate limit counts every request of its window whatever order they commit in: requests read their
/// time when they arrive and commit later, in batches and on several hosts, so one stamped a moment before the
/// window's start still counts in that window.
@Suite(.tags(.postgres), .timeLimit(.minutes(15))) struct RateLimitOrderTests {
    @Test(arguments: [StoreKind.sqlite, .postgresql]) func aRequestStampedJustBeforeTheWindowStartedCountsInItInsteadOfStartingItAgain(_ kind: StoreKind) throws {
        let h = try RelayHarness(kind)
        try h.register(Fixture.deviceID(1), Fixture.token(1), now: Date(timeIntervalSince1970: 1_780_000_000))
        let store = FrontDoorStore(database: try h.database(), keyring: try h.keyring())
        let t: Int64 = 1_780_000_000_000
        let limit = 3
        // Arrived at t + 5 ms, t + 0 and t + 1 s in that order of commit, then two more: limit 3, so the 4th and 5th are refused.
        let answers = try [t + 5, t, t + 1_000, t + 2_000, t + 3_000].map {
            try store.rateLimit(route: "trigger", deviceID: Fixture.deviceID(1), limit: limit, now: $0)
        }
        #expect(answers.map { $0 == nil } == [true, true, true, false, false], "\(answers)")
        #expect(answers[3].map { (1...60).contains($0) } == true, "Retry-After within the window: \(answers)")
        // A time a whole window (60 s) away, ahead or behind (a stepped clock), starts a new window.
        #expect(try store.rateLimit(route: "trigger", deviceID: Fixture.deviceID(1), limit: limit, now: t + 61_000) == nil)
        #expect(try store.rateLimit(route: "trigger", deviceID: Fixture.deviceID(1), limit: limit, now: t - 120_000) == nil)
    }
}
