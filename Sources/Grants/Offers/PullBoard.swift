import Foundation
import Runner

/// The shared state of one pull-offers pass's dialling threads: the contacts still to dial, the counts and the
/// contacts skipped for time so far, and the first store failure (which ends the pass). Guarded by one lock.
final class PullBoard: @unchecked Sendable {
    private let lock = NSLock()
    private let items: [(Contact, HeldGrant)]
    private var cursor = 0
    private var doneCount = 0
    private var halted = false
    private(set) var counts = Counts()
    private var skipped: [(index: Int, label: String)] = []
    private(set) var failure: Error?

    init(_ items: [(Contact, HeldGrant)]) { self.items = items }

    /// The next contact to dial and its place in the order; nil when all are taken or the pass was halted.
    func next() -> (index: Int, contact: Contact, grant: HeldGrant)? {
        lock.lock(); defer { lock.unlock() }
        guard !halted, cursor < items.count else { return nil }
        defer { cursor += 1 }
        return (cursor, items[cursor].0, items[cursor].1)
    }

    /// Adds one contact's counts (each dialling thread adds once per contact it took, so this also counts it done).
    func add(_ more: Counts) {
        lock.lock(); defer { lock.unlock() }
        for (key, value) in more.entries { counts[key] += value }
        doneCount += 1
    }

    /// Contacts finished so far (for progress, read by the coordinating thread).
    var done: Int {
        lock.lock(); defer { lock.unlock() }
        return doneCount
    }

    /// Records that the contact at `index` was skipped for time.
    func skippedForTime(index: Int, label: String) {
        lock.lock(); defer { lock.unlock() }
        skipped.append((index, label))
    }

    /// Labels of the contacts skipped for time, in dialling order.
    var skippedLabels: [String] {
        lock.lock(); defer { lock.unlock() }
        return skipped.sorted { $0.index < $1.index }.map(\.label)
    }

    /// Stops handing out contacts (SIGTERM, or `error` when given: the first one is kept and ends the pass).
    func halt(_ error: Error? = nil) {
        lock.lock(); defer { lock.unlock() }
        halted = true
        if failure == nil, let error { failure = error }
    }
}

/// Runs `body(index)` on `count` threads at once and returns when every one has finished.
enum ThreadGroup {
    /// Runs `body` on `count` threads and waits for all; meanwhile the calling thread runs `waiting` about every
    /// `every` seconds (progress reporting stays on the coordinating thread).
    static func run(_ count: Int, every: TimeInterval = 0.25, waiting: () -> Void = {}, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                body(index)
                group.leave()
            }.start()
        }
        while group.wait(timeout: .now() + every) == .timedOut { waiting() }
    }
}
