import Foundation

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
