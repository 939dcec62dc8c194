import Elapsed
import Foundation
import Store
import Testing
import TestSupport
@testable import Relay

/// `send-wakeups` writes the answers it queued once `AnswerRecorder.flushInterval` has passed on the injected
/// monotonic clock, which the test moves instead of sleeping.
@Suite(.timeLimit(.minutes(15))) struct AnswerRecorderFlushTests {
    @Test func queuedAnswersAreWrittenOnceTheFlushIntervalHasPassedAndNotBefore() throws {
        let directory = TemporaryDirectory("answers")
        let database = try Database(path: directory.file("store.sqlite"))
        let manual = ManualClock()
        let targets = (0..<3).map { row in
            SendWakeupsJob.Target(tokenRow: Int64(row), token: "token", environment: .sandbox, device: 1, previousSentAt: nil, stamp: 1000)
        }
        let recorder = AnswerRecorder(database: database, targets: targets, now: 1000, clock: { 1000 }, elapsed: manual.clock)
        let answer = APNsPush.Result(status: nil, reason: nil, invalidatedAt: nil, action: .transportFailure)
        recorder.record(target: 0, answer, sent: false)
        manual.advance(by: AnswerRecorder.flushInterval * 0.9)
        recorder.record(target: 1, answer, sent: false)
        #expect(recorder.queued == 2, "nothing written before the interval")
        manual.advance(by: AnswerRecorder.flushInterval * 0.1)
        recorder.record(target: 2, answer, sent: false)
        // The write itself fails here (the store has no relay tables): what matters is that the queue was taken.
        #expect(recorder.queued == 0, "the queue is written once the interval has passed")
    }
}
