import Foundation
import Runner
import Store

/// Store connections for the server's worker threads: each request checks one out, uses it alone, and
/// returns it. A connection is never used by two requests at once; idle ones are kept up to `keep`.
final class DatabasePool: @unchecked Sendable {
    // @unchecked: `idle` is touched only under `lock`; a checked-out Database is used by that one request's thread alone.
    let path: String
    let keep: Int
    private var idle: [Database] = []
    private let lock = NSLock()

    init(path: String, keep: Int = 16) {
        self.path = path
        self.keep = keep
    }

    /// Runs `body` with a connection of its own.
    func with<T>(_ body: (Database) throws -> T) throws -> T {
        let reused = lock.withLock { idle.popLast() }
        let database: Database
        if let reused { database = reused } else {
            do { database = try Database(path: path) } catch { throw StoreFailure.jobError(for: error) }
        }
        defer {
            lock.withLock { if idle.count < keep { idle.append(database) } }
        }
        return try body(database)
    }
}
