import Foundation
import Runner
import Synchronization

/// The shared state of one pull-offers pass's dialling threads: the contacts still to dial, the counts and the
/// contacts skipped for time so far, and the first store failure (which ends the pass). Guarded by one lock.
final class PullBoard: Sendable {
    private let items: [(Contact, HeldGrant)]
    private struct State {
        var cursor = 0
        var doneCount = 0
        var halted = false
        var counts = Counts()
        var skipped: [(index: Int, label: String)] = []
        var failure: Error?
    }
    private let state = Mutex(State())

    init(_ items: [(Contact, HeldGrant)]) { self.items = items }

    /// The next contact to dial and its place in the order; nil when all are taken or the pass was halted.
    func next() -> (index: Int, contact: Contact, grant: HeldGrant)? {
        state.withLock { state in
            guard !state.halted, state.cursor < items.count else { return nil }
            defer { state.cursor += 1 }
            return (state.cursor, items[state.cursor].0, items[state.cursor].1)
        }
    }

    /// Adds one contact's counts (each dialling thread adds once per contact it took, so this also counts it done).
    func add(_ more: Counts) {
        state.withLock { state in
            for (key, value) in more.entries { state.counts[key] += value }
            state.doneCount += 1
        }
    }

    /// Contacts finished so far (for progress, read by the coordinating thread).
    var done: Int { state.withLock { $0.doneCount } }

    /// The counts added so far.
    var counts: Counts { state.withLock { $0.counts } }

    /// The first store failure, which ended the pass.
    var failure: Error? { state.withLock { $0.failure } }

    /// Records that the contact at `index` was skipped for time.
    func skippedForTime(index: Int, label: String) {
        state.withLock { $0.skipped.append((index, label)) }
    }

    /// Labels of the contacts skipped for time, in dialling order.
    var skippedLabels: [String] {
        state.withLock { $0.skipped.sorted { $0.index < $1.index }.map(\.label) }
    }

    /// Stops handing out contacts (SIGTERM, or `error` when given: the first one is kept and ends the pass).
    func halt(_ error: Error? = nil) {
        state.withLock { state in
            state.halted = true
            if state.failure == nil, let error { state.failure = error }
        }
    }
}
