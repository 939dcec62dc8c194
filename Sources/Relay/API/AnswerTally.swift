import Foundation
import Synchronization

/// Counts of the answers `serve-relay` gave, by class, for its stop log line (counts only, never what was asked).
final class AnswerTally: Sendable {
    private let counts = Mutex<[Int: Int]>([:])

    func record(_ status: Int) { counts.withLock { $0[status, default: 0] += 1 } }

    /// (2xx, 4xx other than 429, 429, 5xx)
    var summary: (ok: Int, refused: Int, rateLimited: Int, failed: Int) {
        var result = (ok: 0, refused: 0, rateLimited: 0, failed: 0)
        for (status, count) in counts.withLock({ $0 }) {
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
