#if canImport(Glibc)
import Glibc
#endif
import Runner
import Store

/// Store connections for the server's worker threads: each request checks one out, uses it alone, and
/// returns it. A connection is never used by two requests at once; idle ones are kept up to `keep`.
final class DatabasePool: @unchecked Sendable {
    let path: String
    let keep: Int
    private var idle: [Database] = []
    private var lock = pthread_mutex_t()

    init(path: String, keep: Int = 16) {
        self.path = path
        self.keep = keep
        pthread_mutex_init(&lock, nil)
    }

    /// Runs `body` with a connection of its own.
    func with<T>(_ body: (Database) throws -> T) throws -> T {
        pthread_mutex_lock(&lock)
        let reused = idle.popLast()
        pthread_mutex_unlock(&lock)
        let database: Database
        if let reused { database = reused } else {
            do { database = try Database(path: path) } catch { throw StoreFailure.jobError(for: error) }
        }
        defer {
            pthread_mutex_lock(&lock)
            if idle.count < keep { idle.append(database) }
            pthread_mutex_unlock(&lock)
        }
        return try body(database)
    }
}
