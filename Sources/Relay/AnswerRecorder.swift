import Foundation
import Runner
import Store

/// Records `send-wakeups` answers on their tokens as they arrive, in small transactions (at most
/// `batchSize` rows, at least every `flushInterval`), so a pass stopped at any point keeps every answer it
/// received and its rerun never pushes those tokens again for the same trigger.
///
/// An answer also moves the token's stamp (`sent_at`, the end of this pass's claim) to the answer's time, when the
/// push has certainly reached APNs, so the next debounce window counts from there (`WakeupClaim`). A push that was
/// never sent (the batch was cancelled first, or its claim was lost) gets its stamp released instead, unless the
/// token already has an answer from this pass. Every stamp change is a compare-and-set on the stamp this pass
/// holds (`stamps`). A write failure is kept in `failure` (the caller stops the batch and throws it).
final class AnswerRecorder {
    static let batchSize = 200
    static let flushInterval: TimeInterval = 0.1

    let database: Database
    private let targets: [SendWakeupsJob.Target]
    private let now: Int64
    private let clock: () -> Int64
    /// The stamp (`sent_at`) this pass holds on each target's token, as written; nil once given up.
    private(set) var stamps: [Int64?]
    /// Answers not yet written: the target, whether its push was sent, and what its answer means.
    private var pending: [(target: Int, sent: Bool, result: APNsPush.Result)] = []
    private var answered = Set<Int>()
    private var lastFlush = Date()
    private(set) var failure: Error?

    /// `now` is the pass's clock when it started (the answers' `result_at`); `clock` reads the clock as it moves on.
    init(database: Database, targets: [SendWakeupsJob.Target], now: Int64, clock: @escaping () -> Int64) {
        self.database = database
        self.targets = targets
        self.now = now
        self.clock = clock
        stamps = targets.map(\.stamp)
    }

    /// Records that `targets[index]`'s claim now ends at `stamp` (renewed), or was lost (nil).
    func held(_ index: Int, stamp: Int64?) {
        stamps[index] = stamp
    }

    /// Queues the answer for `targets[target]` (`sent` false: its push never left, the stamp is released); writes
    /// the queue when it is full or old enough.
    func record(target: Int, _ result: APNsPush.Result, sent: Bool) {
        pending.append((target, sent, result))
        if pending.count >= Self.batchSize || Date().timeIntervalSince(lastFlush) >= Self.flushInterval {
            do { try flush() } catch { if failure == nil { failure = error } }
        }
    }

    /// Writes every queued answer in one transaction.
    func flush() throws {
        lastFlush = Date()
        guard !pending.isEmpty, failure == nil else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        let answeredAt = clock()
        var moved: [(Int, Int64?)] = []
        try database.write { db in
            for (index, sent, result) in batch {
                let row = targets[index].tokenRow
                if !sent {
                    guard !answered.contains(index), let stamp = stamps[index] else { continue }
                    try db.execute("UPDATE relay_tokens SET sent_at = ? WHERE id = ? AND sent_at = ?", [targets[index].previousSentAt, row, stamp])
                    moved.append((index, nil))
                    continue
                }
                answered.insert(index)
                var holds = false
                if let stamp = stamps[index] {
                    holds = try db.execute("UPDATE relay_tokens SET sent_at = ? WHERE id = ? AND sent_at = ?", [answeredAt, row, stamp]) > 0
                    moved.append((index, holds ? answeredAt : nil))
                }
                let retry = [.retryNextPass, .remintProviderToken, .configuration].contains(result.action) ? 1 : 0
                if let status = result.status {
                    try db.execute("""
                        UPDATE relay_tokens SET result_status = ?, result_reason = ?, result_at = ?, invalidated_at = ?, retry_due = ? WHERE id = ?
                        """, [status, result.reason, now, result.invalidatedAt, retry, row])
                } else if holds {
                    // No answer: retried next pass — unless another pass took the claim meanwhile (its answer decides).
                    try db.execute("UPDATE relay_tokens SET retry_due = 1 WHERE id = ?", [row])
                }
            }
        }
        for (index, stamp) in moved { stamps[index] = stamp }
    }

    /// Releases the stamps of `indices` (a pass stopped before sending anything, a claim given up).
    func releaseStamps<S: Sequence>(_ indices: S) throws where S.Element == Int {
        let all = Array(indices)
        for start in stride(from: 0, to: all.count, by: SendWakeupsJob.batchSize) {
            try database.write { db in
                for index in all[start..<min(start + SendWakeupsJob.batchSize, all.count)] {
                    guard let stamp = stamps[index] else { continue }
                    try db.execute("UPDATE relay_tokens SET sent_at = ? WHERE id = ? AND sent_at = ?", [targets[index].previousSentAt, targets[index].tokenRow, stamp])
                }
            }
        }
        for index in all { stamps[index] = nil }
    }
}
