import Foundation

/// Counts of the answers `serve-relay` gave, by class, for its stop log line (counts only, never what was asked).
final class AnswerTally: @unchecked Sendable {
    // @unchecked: `counts` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var counts: [Int: Int] = [:]

    func record(_ status: Int) { lock.withLock { counts[status, default: 0] += 1 } }

    /// (2xx, 4xx other than 429, 429, 5xx)
    var summary: (ok: Int, refused: Int, rateLimited: Int, failed: Int) {
        lock.withLock {
            var result = (ok: 0, refused: 0, rateLimited: 0, failed: 0)
            for (status, count) in counts {
                switch status {
                case 200..<300: result.ok += count
                case 429: result.rateLimited += count
                case 400..<500: result.refused += count
                default: result.failed += count
                }
            }
            return result
        }
    }
}
