import Elapsed
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
    /// The clock the flush interval is timed on.
    private let elapsed: MonotonicClock
    private var lastFlush: MonotonicInstant
    private(set) var failure: Error?

    /// `now` is the pass's clock when it started (the answers' `result_at`); `clock` reads the clock as it moves on;
    /// `elapsed` times the flush interval.
    init(database: Database, targets: [SendWakeupsJob.Target], now: Int64, clock: @escaping () -> Int64, elapsed: MonotonicClock = .system) {
        self.database = database
        self.targets = targets
        self.now = now
        self.clock = clock
        self.elapsed = elapsed
        lastFlush = elapsed.now()
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
        if pending.count >= Self.batchSize || elapsed.seconds(since: lastFlush) >= Self.flushInterval {
            do { try flush() } catch { if failure == nil { failure = error } }
        }
    }

    /// Writes every queued answer in one transaction, a few statements for the whole queue (`RelayRows`): the stamps
    /// released, the stamps moved to the answer's time (one compare-and-set per stamp held), the results (one
    /// statement per distinct result) and the retries. A target queued twice (a push sent again) is written in a
    /// later step of the same transaction, after its first answer.
    /// Answers queued and not yet written.
    var queued: Int { pending.count }

    func flush() throws {
        lastFlush = elapsed.now()
        guard !pending.isEmpty, failure == nil else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        let answeredAt = clock()
        var moved: [Int: Int64?] = [:]
        try database.write { db in
            var start = 0
            while start < batch.count {
                var seen = Set<Int>()
                var end = start
                while end < batch.count, seen.insert(batch[end].target).inserted { end += 1 }
                try write(batch[start..<end], db, answeredAt: answeredAt, moved: &moved)
                start = end
            }
        }
        for (index, stamp) in moved { stamps[index] = stamp }
    }

    /// A stamp change shared by many rows.
    private struct StampMove: Hashable {
        let from: Int64
        let to: Int64?
    }

    /// A result shared by many rows.
    private struct Verdict: Hashable {
        let status: Int
        let reason: String?
        let invalidatedAt: Int64?
        let retry: Int
    }

    /// Writes `step` (each target at most once) inside the open transaction; `moved` collects the stamps as they will
    /// be once it commits.
    private func write(_ step: ArraySlice<(target: Int, sent: Bool, result: APNsPush.Result)>, _ db: Database, answeredAt: Int64,
                       moved: inout [Int: Int64?]) throws {
        // Pushes never sent: the stamp goes back to what it was, unless the token has an answer from this pass.
        var releases: [StampMove: [Int]] = [:]
        for (index, sent, _) in step where !sent {
            guard !answered.contains(index), let stamp = moved[index] ?? stamps[index] else { continue }
            releases[StampMove(from: stamp, to: targets[index].previousSentAt), default: []].append(index)
        }
        for (move, indices) in releases {
            _ = try RelayRows.moveStamps(db, rows: indices.map { targets[$0].tokenRow }, from: move.from, to: move.to)
            for index in indices { moved[index] = .some(nil) }
        }
        // Answers: the stamp moves to the answer's time where this pass still holds it.
        var answers: [Int64: [Int]] = [:]
        for (index, sent, _) in step where sent {
            answered.insert(index)
            if let stamp = moved[index] ?? stamps[index] { answers[stamp, default: []].append(index) }
        }
        var holding = Set<Int>()
        for (stamp, indices) in answers {
            let changed = try RelayRows.moveStamps(db, rows: indices.map { targets[$0].tokenRow }, from: stamp, to: answeredAt)
            for index in indices {
                let holds = changed.contains(targets[index].tokenRow)
                if holds { holding.insert(index) }
                moved[index] = .some(holds ? answeredAt : nil)
            }
        }
        // The results, one statement per distinct result; no answer: retried next pass — unless another pass took the
        // claim meanwhile (its answer decides).
        var verdicts: [Verdict: [Int64]] = [:]
        var retries: [Int64] = []
        for (index, sent, result) in step where sent {
            let retry = [.retryNextPass, .remintProviderToken, .configuration].contains(result.action) ? 1 : 0
            if let status = result.status {
                verdicts[Verdict(status: status, reason: result.reason, invalidatedAt: result.invalidatedAt, retry: retry), default: []].append(targets[index].tokenRow)
            } else if holding.contains(index) {
                retries.append(targets[index].tokenRow)
            }
        }
        for (verdict, rows) in verdicts {
            let (clause, argument) = RelayRows.clause(db, rows)
            try db.execute("""
                UPDATE relay_tokens SET result_status = ?, result_reason = ?, result_at = ?, invalidated_at = ?, retry_due = ? WHERE \(clause)
                """, [verdict.status, verdict.reason, now, verdict.invalidatedAt, verdict.retry, argument])
        }
        if !retries.isEmpty {
            let (clause, argument) = RelayRows.clause(db, retries)
            try db.execute("UPDATE relay_tokens SET retry_due = 1 WHERE \(clause)", [argument])
        }
    }

    /// Releases the stamps of `indices` (a pass stopped before sending anything, a claim given up): a compare-and-set
    /// per stamp held and earlier value, in transactions of `SendWakeupsJob.batchSize` targets.
    func releaseStamps<S: Sequence>(_ indices: S) throws where S.Element == Int {
        let all = Array(indices)
        for start in stride(from: 0, to: all.count, by: SendWakeupsJob.batchSize) {
            var releases: [StampMove: [Int64]] = [:]
            for index in all[start..<min(start + SendWakeupsJob.batchSize, all.count)] {
                guard let stamp = stamps[index] else { continue }
                releases[StampMove(from: stamp, to: targets[index].previousSentAt), default: []].append(targets[index].tokenRow)
            }
            guard !releases.isEmpty else { continue }
            try database.write { db in
                for (move, rows) in releases { _ = try RelayRows.moveStamps(db, rows: rows, from: move.from, to: move.to) }
            }
        }
        for index in all { stamps[index] = nil }
    }
}
