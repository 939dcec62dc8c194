import CSQLite
import CShims
import Elapsed
import Foundation

/// A connection to the store: an SQLite file, configured for many short-lived processes sharing one file, or a
/// PostgreSQL database (the relay role's store at scale) reached through libpq.
///
/// Every SQLite connection runs in WAL mode with a busy timeout and foreign keys on; every write goes through
/// `write { }`, a `BEGIN IMMEDIATE` transaction. A `Database` is used from one thread at a time.
/// Its public API carries no SQLite or libpq types: callers write SQL with `?`/`?N` placeholders and get
/// `DatabaseValue`s back, whichever engine stands behind it. What differs between the engines' SQL is for each
/// module to keep in one place (its dialect); `engine` tells which one this is.
package final class Database {
    /// Which engine stands behind a connection.
    package enum Engine: String, Sendable {
        case sqlite
        case postgresql
    }

    enum Backend {
        case sqlite(OpaquePointer)
        case postgresql(PostgresConnection)
    }

    let backend: Backend
    /// The SQLite handle (statements exist on SQLite connections only).
    var handle: OpaquePointer {
        guard case .sqlite(let handle) = backend else { preconditionFailure("an SQLite statement on a PostgreSQL connection") }
        return handle
    }
    /// The file this connection opened, or the PostgreSQL connection string it was given.
    package let path: String
    /// The engine behind this connection.
    package var engine: Engine {
        if case .postgresql = backend { return .postgresql }
        return .sqlite
    }
    private var statementCache: [String: Statement] = [:]
    /// Rows changed by the last statement on a PostgreSQL connection.
    private var postgresChanges = 0
    /// True when the connection to a PostgreSQL server was lost (it cannot be used again; open a new one).
    /// Always false for SQLite.
    package var isBroken: Bool {
        if case .postgresql(let connection) = backend { return connection.isBroken }
        return false
    }
    /// True while `write { }` or `read { }` runs on this connection.
    public private(set) var isInTransaction = false
    /// Commits this connection made (each one durable under `synchronous = FULL`): `write { }` and `read { }`
    /// outside a group-commit batch, and each batch a `GroupCommitWriter` commits.
    public private(set) var commits = 0
    /// True while a `GroupCommitWriter` holds a batch's transaction open on this connection: `write { }` and
    /// `read { }` then run as savepoints inside it, so one request's failure undoes only that request's changes.
    var isInBatch = false
    /// Savepoints opened in the current batch so far (the first request's is 1).
    private var batchSavepoints = 0
    /// PostgreSQL: the last request's savepoint is still to be released (with the next `SAVEPOINT`, or by `COMMIT`).
    private var batchReleasePending = false
    /// The savepoint the writer's current request opens first. Only that one may be deferred: a request whose
    /// earlier `write { }` was already released into the batch would run it twice if it ran again, so its later
    /// writes wait for their locks as a transaction of their own would.
    private var batchRequestFirstSavepoint = 0

    /// Marks the start of the writer's next request in the open batch (see `batchRequestFirstSavepoint`).
    func startBatchRequest() { batchRequestFirstSavepoint = batchSavepoints + 1 }
    /// Set when a request of a batch on PostgreSQL must not finish in this batch: it would have had to wait for a
    /// lock while the batch holds others' (`lockForWrite`), or it lost a deadlock or timed out on a lock. Its
    /// savepoint was rolled back; the writer runs it again first in the next batch.
    var batchRequestDeferred = false
    /// Whether SQLite has a transaction open on this connection ("sqlite3_get_autocommit() returns … zero if
    /// autocommit mode is disabled", i.e. inside BEGIN … COMMIT). Some failures (SQLITE_FULL, SQLITE_IOERR,
    /// SQLITE_NOMEM) roll the whole transaction back on their own; a batch checks this after every request.
    var sqliteTransactionIsOpen: Bool {
        guard case .sqlite(let handle) = backend else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// How the connection is opened.
    package struct Options: Sendable {
        /// How long a statement waits for another process's lock before failing with `busy` (docs/design.md §4: ≥ 5 s).
        package var busyTimeoutMilliseconds: Int32 = 10_000
        /// Open without the right to write (status and listings).
        package var readOnly = false
        /// Create the file when it does not exist.
        package var create = true
        /// With `readOnly`: read the file as it is, without the `-shm` file WAL mode needs (SQLite's `immutable=1`),
        /// so a store on a read-only mount can still be inspected. Only for reports: another writer would go unseen.
        package var immutable = false
        /// How long connecting to a PostgreSQL server may take before the store counts as unavailable.
        package var connectTimeoutSeconds = 10
        package init() {}
    }

    /// Whether `location` (a `--store` value) names a PostgreSQL database rather than an SQLite file: a
    /// `postgresql://` or `postgres://` URI, or any libpq `key=value` connection string — optional white space, a
    /// keyword, `=` (`service=relay`, ` sslmode=verify-full host=db`, `application_name=relay`). A file path
    /// holding `=` is taken as a file only in the form `file:PATH` or `./PATH` (`checkedLocation`).
    package static func engine(forLocation location: String) -> Engine {
        if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") { return .postgresql }
        if location.hasPrefix("./") { return .sqlite }
        var rest = Substring(location).drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{0B}" || $0 == "\u{0C}" }
        let keyword = rest.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
        guard !keyword.isEmpty else { return .sqlite }
        rest = rest.dropFirst(keyword.count).drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        return rest.first == "=" ? .postgresql : .sqlite
    }

    /// A `--store` value checked and in the form the store opens: `file:PATH` becomes `PATH`; nil (with the reason
    /// in `refusal`, one line that never repeats the value) for a location that is neither a clean file path nor a
    /// valid connection string — a path holding `=` without `file:` or `./`, a malformed `key=value` string, an
    /// empty path, control characters or white space around a path.
    package static func checkedLocation(_ location: String, refusal: inout String) -> String? {
        if location.hasPrefix("file:") {
            let path = String(location.dropFirst(5))
            guard isCleanPath(path) else { refusal = "the store path after file: is empty or holds control characters or surrounding white space"; return nil }
            // A relative path keeps a `./` so it is never read as `key=value` again.
            return path.hasPrefix("/") || path.hasPrefix("./") ? path : "./" + path
        }
        if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") { return location }
        if engine(forLocation: location) == .postgresql || (location.contains("=") && !location.hasPrefix("./")) {
            guard (try? PostgresConnection.secrets(in: location)) != nil else {
                refusal = "the store location is neither a valid PostgreSQL connection string (key=value …) nor a file path "
                    + "(a path holding '=' is given as file:PATH or ./PATH)"
                return nil
            }
            return location
        }
        guard isCleanPath(location) else { refusal = "the store path is empty or holds control characters or surrounding white space"; return nil }
        return location
    }

    private static func isCleanPath(_ path: String) -> Bool {
        guard let first = path.unicodeScalars.first, let last = path.unicodeScalars.last else { return false }
        return !first.properties.isWhitespace && !last.properties.isWhitespace
            && !path.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// Opens the store at `path`: a PostgreSQL database when `path` is a connection string (see
    /// `engine(forLocation:)`), else the SQLite file, created unless `options.create` is false.
    ///
    /// A file that is not an SQLite database fails here with `StoreError.kind == .notADatabase`; the file is
    /// not modified. A PostgreSQL server that cannot be reached fails with `.unavailable`.
    package init(path: String, options: Options = Options()) throws {
        self.path = path
        if Self.engine(forLocation: path) == .postgresql {
            let connection = try PostgresConnection(conninfo: path, connectTimeoutSeconds: options.connectTimeoutSeconds)
            backend = .postgresql(connection)
            // "lock_timeout: Abort any statement that waits longer than the specified amount of time while
            // attempting to acquire a lock" — the busy timeout's counterpart (SQLSTATE 55P03, `busy`).
            var settings = "SET lock_timeout = \(options.busyTimeoutMilliseconds)"
            if options.readOnly { settings += "; SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY" }
            try connection.execute(settings)
            return
        }
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if options.create && !options.readOnly { flags |= SQLITE_OPEN_CREATE }
        var location = path
        if options.readOnly && options.immutable {
            // A URI filename: "immutable=1 … the database file cannot be changed, even by a process with higher
            // privilege", so SQLite takes no locks and needs no -shm. Characters URIs reserve are escaped.
            flags |= SQLITE_OPEN_URI
            let escaped = path.utf8.map { byte -> String in
                byte >= 0x80 || byte == UInt8(ascii: "%") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
                    ? String(format: "%%%02X", byte) : String(UnicodeScalar(byte))
            }
            location = "file:" + (path.hasPrefix("/") ? "" : "./") + escaped.joined() + "?immutable=1"
        }
        var connection: OpaquePointer?
        let rc = sqlite3_open_v2(location, &connection, flags, nil)
        guard rc == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let connection { sqlite3_close_v2(connection) }
            throw StoreError(extendedCode: rc, message: message)
        }
        backend = .sqlite(connection)
        sqlite3_extended_result_codes(connection, 1)
        do {
            try configure(options)
        } catch {
            statementCache.removeAll()
            sqlite3_close_v2(connection)
            throw error
        }
    }

    deinit {
        statementCache.removeAll()
        if case .sqlite(let handle) = backend { sqlite3_close_v2(handle) }
    }

    private func configure(_ options: Options) throws {
        // "This routine sets a busy handler that sleeps for a specified amount of time when a table is locked."
        // Ours polls every 2 ms instead of backing off to 100 ms, so no writer starves behind batched passes.
        shim_sqlite3_fair_busy_timeout(handle, options.busyTimeoutMilliseconds)
        // Reading the schema first makes a file that is not a database fail here, before any pragma writes:
        // "SQLITE_NOTADB: the file being opened does not appear to be an SQLite database file."
        if !options.readOnly {
            // Both pragmas below need a write lock even when they change nothing, so they run only when needed:
            // opening a connection must never wait for another process's write transaction.
            let tables: Int64 = try scalar("SELECT count(*) FROM sqlite_schema") ?? 0
            if tables == 0 {
                // "Auto-vacuuming must be turned on before any tables are created. It is not possible to enable
                // or disable auto-vacuum after a table has been created." — PRAGMA auto_vacuum.
                try execute("PRAGMA auto_vacuum = INCREMENTAL")
            }
            try switchToWAL(within: options.busyTimeoutMilliseconds)
        }
        // "In WAL mode when synchronous is NORMAL, … a transaction committed … might roll back following a power
        // loss." Grants, tokens and offers must survive power loss: FULL.
        try execute("PRAGMA synchronous = FULL")
        // "Foreign key constraints are disabled by default … must be enabled separately for each connection."
        try execute("PRAGMA foreign_keys = ON")
        try execute("PRAGMA trusted_schema = OFF")
    }

    /// Puts the file in WAL mode unless it already is.
    ///
    /// "The WAL journaling mode is persistent; after being set it stays in effect across multiple database
    /// connections and after closing and reopening the database." The switch needs an exclusive lock, and when
    /// another connection is opening the same new file at that moment SQLite can answer SQLITE_BUSY without
    /// calling the busy handler: "If SQLite determines that invoking the busy handler could result in a deadlock,
    /// it will go ahead and return SQLITE_BUSY to the application instead of invoking the busy handler."
    /// So the switch is retried here (each try releases its locks) until the busy timeout.
    private func switchToWAL(within timeoutMilliseconds: Int32) throws {
        // The monotonic clock: a wall clock stepped back mid-open would stretch the retries past the busy timeout.
        let clock = MonotonicClock.system
        let deadline = clock.deadline(in: Double(timeoutMilliseconds) / 1000)
        while true {
            do {
                let current: String? = try scalar("PRAGMA journal_mode")
                if current?.lowercased() == "wal" { return }
                let mode: String? = try scalar("PRAGMA journal_mode = WAL")
                guard mode?.lowercased() == "wal" else {
                    throw StoreError.misuse("the store could not be switched to WAL mode")
                }
                return
            } catch let error as StoreError where error.kind == .busy && !clock.hasPassed(deadline) {
                usleep(2_000)
            }
        }
    }

    // MARK: Running statements

    /// Prepares `sql`; the statement is finalized when released.
    package func prepare(_ sql: String) throws -> Statement {
        guard case .sqlite = backend else { throw StoreError.misuse("prepared statements are for SQLite stores", sql: sql) }
        return try Statement(database: self, sql: sql)
    }

    /// A prepared statement kept for reuse on this connection (for SQL run many times in a pass).
    package func cachedStatement(_ sql: String) throws -> Statement {
        if let cached = statementCache[sql] { return cached }
        let statement = try prepare(sql)
        statementCache[sql] = statement
        return statement
    }

    /// Runs one or more statements with no arguments (a migration script, a pragma).
    package func execute(_ sql: String) throws {
        if case .postgresql(let connection) = backend { return try connection.execute(sql) }
        try sql.withCString { start in
            var cursor: UnsafePointer<CChar>? = start
            while let current = cursor, current.pointee != 0 {
                var statementHandle: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(handle, current, -1, &statementHandle, &tail)
                let text = { () -> String in
                    var count = tail.map { current.distance(to: $0) } ?? strlen(current)
                    if rc != SQLITE_OK {
                        // A statement that fails to parse leaves no useful tail: show it up to its semicolon.
                        count = 0
                        while current[count] != 0 && current[count] != 0x3b { count += 1 }
                        if current[count] == 0x3b { count += 1 }
                    }
                    let bytes = UnsafeRawBufferPointer(start: current, count: count)
                    return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                }
                guard rc == SQLITE_OK else { throw error(rc, sql: text()) }
                // "If the input text contains no SQL (if the input is an empty string or a comment) then *ppStmt
                // is set to NULL." Nothing to run; move on.
                if let statementHandle {
                    defer { sqlite3_finalize(statementHandle) }
                    var stepRC = sqlite3_step(statementHandle)
                    while stepRC == SQLITE_ROW { stepRC = sqlite3_step(statementHandle) }
                    guard stepRC == SQLITE_DONE else { throw error(stepRC, sql: text()) }
                }
                guard let tail, tail != current else { break }
                cursor = tail
            }
        }
    }

    /// Runs one statement with arguments; returns the number of rows it changed.
    @discardableResult
    package func execute(_ sql: String, _ arguments: [any DatabaseValueConvertible]) throws -> Int {
        if case .postgresql(let connection) = backend {
            postgresChanges = try connection.run(sql, arguments.map(\.databaseValue)).changes
            return postgresChanges
        }
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        while try statement.step() {}
        return Int(sqlite3_changes64(handle))
    }

    /// All rows of a query.
    package func query(_ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws -> [Row] {
        var rows: [Row] = []
        try forEachRow(sql, arguments) { rows.append($0) }
        return rows
    }

    /// The first row of a query, if any.
    package func queryOne(_ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws -> Row? {
        if case .postgresql(let connection) = backend {
            let result = try connection.run(sql, arguments.map(\.databaseValue))
            postgresChanges = result.changes
            return result.rows.first.map { Row(columnNames: result.columnNames, values: $0) }
        }
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.row(columnNames: statement.columnNames)
    }

    /// The first column of the first row, decoded; nil when there is no row or the value is NULL.
    package func scalar<T: DatabaseValueConvertible>(_ sql: String, _ arguments: [any DatabaseValueConvertible] = []) throws -> T? {
        guard let row = try queryOne(sql, arguments) else { return nil }
        if case .null = row[0] { return nil }
        return try row.get(0, as: T.self)
    }

    /// Streams the rows of a query to `body` without holding them all in memory.
    ///
    /// On PostgreSQL the rows are fetched whole first (libpq returns a statement's result at once); the relay's
    /// queries are bounded by their `LIMIT`s.
    package func forEachRow(_ sql: String, _ arguments: [any DatabaseValueConvertible] = [], _ body: (Row) throws -> Void) throws {
        if case .postgresql(let connection) = backend {
            let result = try connection.run(sql, arguments.map(\.databaseValue))
            postgresChanges = result.changes
            for values in result.rows { try body(Row(columnNames: result.columnNames, values: values)) }
            return
        }
        let statement = try prepare(sql)
        try statement.bind(arguments)
        let names = statement.columnNames
        while try statement.step() { try body(statement.row(columnNames: names)) }
    }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE on this connection.
    package var changes: Int {
        if case .postgresql = backend { return postgresChanges }
        return Int(sqlite3_changes64(handle))
    }

    /// The rowid of the most recent successful INSERT on this connection; on PostgreSQL the value most recently
    /// drawn from a sequence in this session ("lastval: Return value most recently obtained with nextval"), which
    /// an insert into a table whose key is an identity column draws.
    package var lastInsertRowID: Int64 {
        if case .postgresql = backend { return (try? scalar("SELECT lastval()")) ?? 0 }
        return sqlite3_last_insert_rowid(handle)
    }

    // MARK: Transactions

    /// Runs `body` in a write transaction: `BEGIN IMMEDIATE … COMMIT`, rolled back if `body` throws.
    ///
    /// "IMMEDIATE causes the database connection to start a new write immediately, without waiting for a write
    /// statement. The BEGIN IMMEDIATE might fail with SQLITE_BUSY if another write transaction is already active
    /// on another database connection." The busy timeout makes it wait instead. Taking the write lock up front
    /// avoids the deadlock-prone upgrade of a read transaction, which in WAL mode fails with SQLITE_BUSY_SNAPSHOT
    /// without consulting the busy handler.
    ///
    /// On PostgreSQL: `BEGIN` at READ COMMITTED. Writers there do not exclude each other as on SQLite; code that
    /// reads and then writes must lock what it read (`FOR UPDATE`, an advisory lock — see `lockForWrite`).
    @discardableResult
    package func write<T>(_ body: (Database) throws -> T) throws -> T {
        try transaction(engine == .postgresql ? "BEGIN" : "BEGIN IMMEDIATE", body)
    }

    /// Runs `body` in a new write transaction, or directly when one is already open on this connection.
    @discardableResult
    package func writeIfNeeded<T>(_ body: (Database) throws -> T) throws -> T {
        isInTransaction ? try body(self) : try write(body)
    }

    /// Serialises the writers that take the same `key` until this write transaction ends.
    ///
    /// On SQLite a write transaction already excludes every other writer, so this does nothing. On PostgreSQL it
    /// takes a transaction-level advisory lock: "pg_advisory_xact_lock … obtains an exclusive transaction-level
    /// advisory lock, waiting if necessary", released at commit or rollback.
    /// `key` is built only on PostgreSQL.
    ///
    /// Inside a group-commit batch only the batch's first request may wait for a lock: it holds nothing yet, as a
    /// transaction of its own would not. A later request holds the locks of the requests before it, and another
    /// host's batch waiting on those while this one waited on its locks would be a deadlock. It therefore only tries
    /// (`pg_try_advisory_xact_lock`); when another transaction holds the key it throws `busy` and marks the request
    /// to be run again at the head of the next batch (`batchRequestDeferred`). (A request's second `write { }`
    /// waits: its first is already part of the batch.)
    package func lockForWrite(_ key: @autoclosure () -> String) throws {
        guard engine == .postgresql else { return }
        guard isInTransaction else { throw StoreError.misuse("lockForWrite outside a write transaction") }
        if isInBatch && batchSavepoints > 1 && batchSavepoints == batchRequestFirstSavepoint {
            let taken: Int64? = try scalar("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", [key()])
            guard taken == 1 else {
                batchRequestDeferred = true
                throw StoreError(postgresState: "55P03", message: "another transaction holds the lock; the request waits for the next batch")
            }
            return
        }
        _ = try queryOne("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [key()])
    }

    /// Runs `body` in a read transaction (`BEGIN DEFERRED`): one consistent snapshot for all its queries.
    @discardableResult
    package func read<T>(_ body: (Database) throws -> T) throws -> T {
        // PostgreSQL: REPEATABLE READ gives the transaction one snapshot, as SQLite's read transaction does.
        try transaction(engine == .postgresql ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN DEFERRED", body)
    }

    private func transaction<T>(_ begin: String, _ body: (Database) throws -> T) throws -> T {
        if isInBatch && !isInTransaction { return try savepoint(body) }
        guard !isInTransaction else {
            throw StoreError.misuse("a transaction is already open on this connection", sql: begin)
        }
        try execute(begin)
        isInTransaction = true
        defer { isInTransaction = false }
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        // PostgreSQL aborts the whole transaction at a failed statement, and then answers COMMIT with a ROLLBACK
        // ("ERROR: current transaction is aborted, commands ignored until end of transaction block"); SQLite rolls
        // back only the statement. A body that caught such a failure and returned must not be taken as committed.
        if case .postgresql(let connection) = backend, connection.isInFailedTransaction {
            rollbackQuietly()
            throw StoreError(postgresState: "25P02", message: "a statement failed inside the transaction, which was rolled back", sql: begin)
        }
        do {
            try execute("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        commits += 1
        return result
    }

    /// One request's `write { }` or `read { }` inside a group-commit batch: `SAVEPOINT`, released when `body`
    /// returns, rolled back to (undoing only its changes) when it throws. "The ROLLBACK TO command reverts the
    /// state of the database back to what it was just after the corresponding SAVEPOINT."
    ///
    /// On PostgreSQL a failed statement aborts the whole transaction until `ROLLBACK TO` the savepoint, which also
    /// releases the locks taken since ("if a lock is acquired after establishing a savepoint, the lock is released
    /// immediately if the savepoint is rolled back to"); a body that caught such a failure and returned is rolled
    /// back all the same (25P02), as `write { }` does outside a batch.
    ///
    /// On PostgreSQL the savepoint of the request before is released together with this one's `SAVEPOINT`, in one
    /// round trip (and the batch's last one by its `COMMIT`, which releases every savepoint).
    private func savepoint<T>(_ body: (Database) throws -> T) throws -> T {
        try execute(batchReleasePending ? "RELEASE batch_request; SAVEPOINT batch_request" : "SAVEPOINT batch_request")
        batchReleasePending = false
        batchSavepoints += 1
        isInTransaction = true
        defer { isInTransaction = false }
        let result: T
        do {
            result = try body(self)
        } catch {
            rollBackToSavepoint()
            if engine == .postgresql, batchSavepoints > 1, batchSavepoints == batchRequestFirstSavepoint, let failure = error as? StoreError, ["40P01", "55P03"].contains(failure.sqlState ?? "") {
                // A deadlock lost or a lock timeout while the batch held earlier requests' locks: not this request's own outcome.
                batchRequestDeferred = true
            }
            throw error
        }
        if case .postgresql(let connection) = backend, connection.isInFailedTransaction {
            rollBackToSavepoint()
            throw StoreError(postgresState: "25P02", message: "a statement failed inside the request, which was rolled back", sql: "SAVEPOINT batch_request")
        }
        if engine == .postgresql { batchReleasePending = true } else { try execute("RELEASE batch_request") }
        return result
    }

    private func rollBackToSavepoint() {
        switch backend {
        case .sqlite(let handle):
            if sqliteTransactionIsOpen { sqlite3_exec(handle, "ROLLBACK TO batch_request; RELEASE batch_request", nil, nil, nil) }
        case .postgresql(let connection):
            if !connection.isBroken && connection.isInServerTransaction { try? connection.execute("ROLLBACK TO batch_request; RELEASE batch_request") }
        }
    }

    /// Whether the batch's transaction is still open and usable: SQLite may roll the whole of it back on its own
    /// (SQLITE_FULL, SQLITE_IOERR), and a PostgreSQL connection may be lost or its transaction left aborted.
    var batchTransactionIsOpen: Bool {
        switch backend {
        case .sqlite: return sqliteTransactionIsOpen
        case .postgresql(let connection): return !connection.isBroken && connection.isInServerTransaction && !connection.isInFailedTransaction
        }
    }

    /// Rows changed on this SQLite connection since it opened (`sqlite3_total_changes64`); 0 on PostgreSQL.
    var sqliteTotalChanges: Int64 {
        if case .postgresql = backend { return 0 }
        return sqlite3_total_changes64(handle)
    }

    /// Opens a group-commit batch: `BEGIN IMMEDIATE` (PostgreSQL: `BEGIN`, READ COMMITTED as `write { }`), after
    /// which `write { }` and `read { }` are savepoints.
    func beginBatch() throws {
        let begin = engine == .postgresql ? "BEGIN" : "BEGIN IMMEDIATE"
        guard !isInTransaction && !isInBatch else { throw StoreError.misuse("a transaction is already open on this connection", sql: begin) }
        try execute(begin)
        isInBatch = true
        batchSavepoints = 0
        batchRequestFirstSavepoint = 0
        batchReleasePending = false
        batchRequestDeferred = false
    }

    /// The PostgreSQL transaction id of the open batch, nil when it wrote nothing ("txid_current_if_assigned: same
    /// as txid_current(), but returns null instead of assigning a new transaction ID if none is already assigned";
    /// a transaction is given one at its first write, advisory locks and reads take none).
    func postgresBatchTransactionID() throws -> Int64? {
        try scalar("SELECT txid_current_if_assigned()")
    }

    /// What became of the transaction `id` ("txid_status … committed, aborted, in progress"; nil when the server
    /// no longer knows). For a batch whose `COMMIT` lost its connection: was it committed after all?
    func postgresTransactionStatus(_ id: Int64) throws -> String? {
        try scalar("SELECT txid_status(?)", [id])
    }

    /// Commits the open batch (one durable commit for all its requests); on failure it is rolled back.
    func commitBatch() throws {
        isInBatch = false
        do {
            try execute("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        commits += 1
    }

    /// Abandons the open batch, if any: every request's changes in it are undone.
    func abandonBatch() {
        isInBatch = false
        rollbackQuietly()
    }

    private func rollbackQuietly() {
        if case .postgresql(let connection) = backend {
            if connection.isInServerTransaction { try? connection.execute("ROLLBACK") }
            return
        }
        // "If certain kinds of errors occur within a transaction, the transaction may or may not be rolled back
        // automatically." Only roll back when one is still open.
        if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
    }

    /// Stops this connection from writing the WAL back into the main file when it closes.
    ///
    /// "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE … the default behavior of attempting to checkpoint the database on close
    /// is disabled." Used once the file is known to be damaged: this process then changes nothing in it.
    package func leaveMainFileUntouchedOnClose() {
        guard case .sqlite(let handle) = backend else { return }
        shim_sqlite3_no_checkpoint_on_close(handle, 1)
    }

    /// Asks a long-running statement on this connection to stop (safe from another thread).
    package func interrupt() {
        switch backend {
        case .sqlite(let handle): sqlite3_interrupt(handle)
        case .postgresql(let connection): connection.interrupt()
        }
    }

    // MARK: Errors

    func error(_ rc: Int32, sql: String?) -> StoreError {
        let extended = sqlite3_extended_errcode(handle)
        let code = (extended & 0xff) == (rc & 0xff) ? extended : rc
        return StoreError(extendedCode: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}
