import Foundation
import Runner
import Store
import Synchronization

/// Store connections for the server's worker threads: each request checks one out, uses it alone, and
/// returns it. A connection is never used by two requests at once; idle ones are kept up to `keep`. A PostgreSQL
/// connection found broken (the server restarted or failed over) is dropped, so the next request connects anew.
final class DatabasePool: Sendable {
    let path: String
    let keep: Int
    private let idle = Mutex<[Idle]>([])

    /// A connection in the pool, used by no thread until one request's thread checks it out.
    // @unchecked: the one hand-off the compiler cannot follow through `body`, a closure that gives the connection
    // back when it returns (the pool's contract); the pool's own state is checked (`Mutex`).
    private struct Idle: @unchecked Sendable {
        let database: Database
    }

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
        if let reused = idle.withLock({ $0.popLast() })?.database {
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
            if !database.isBroken { idle.withLock { if $0.count < keep { $0.append(Idle(database: database)) } } }
        }
        return try body(database)
    }
}
