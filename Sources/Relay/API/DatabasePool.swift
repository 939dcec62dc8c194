import Foundation
import Runner
import Store

/// Store connections for the server's worker threads: each request checks one out, uses it alone, and
/// returns it. A connection is never used by two requests at once; idle ones are kept up to `keep`. A PostgreSQL
/// connection found broken (the server restarted or failed over) is dropped, so the next request connects anew.
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
    ///
    /// An idle PostgreSQL connection whose server restarted meanwhile fails on first use — at `BEGIN`, before
    /// anything of the request is written; `body` then runs once more on a new connection. (Were a connection to die
    /// during `COMMIT` itself, the retry could count that request's rate limit twice; every other store effect of a
    /// request — a trigger's observation, a registration — is idempotent.)
    func with<T>(_ body: (Database) throws -> T) throws -> T {
        if let reused = lock.withLock({ idle.popLast() }) {
            do {
                return try run(body, on: reused)
            } catch let error as StoreError where error.kind == .connectionLost && reused.isBroken {
                // Fall through to a fresh connection.
            }
        }
        let database: Database
        do { database = try Database(path: path) } catch { throw StoreFailure.jobError(for: error) }
        return try run(body, on: database)
    }

    private func run<T>(_ body: (Database) throws -> T, on database: Database) throws -> T {
        defer {
            if !database.isBroken { lock.withLock { if idle.count < keep { idle.append(database) } } }
        }
        return try body(database)
    }
}
