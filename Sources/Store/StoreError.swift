import CSQLite

/// A failure reported by the store: the SQLite result code (or PostgreSQL's SQLSTATE), the engine's message and
/// the SQL text.
///
/// The bound values are never part of an error, so an error can be logged or shown without leaking
/// an identifier or a secret. `sql` is the statement as written by the program (with `?` placeholders).
package struct StoreError: Error, CustomStringConvertible, Sendable {
    /// The extended SQLite result code (`SQLITE_BUSY_SNAPSHOT`, `SQLITE_CONSTRAINT_UNIQUE`, …).
    package let extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`), or this layer's own for errors that are not SQLite's.
    package let message: String
    /// The SQL being run, if any.
    package let sql: String?
    /// PostgreSQL's five-character SQLSTATE when the store is PostgreSQL (`extendedCode` is then 0).
    package let sqlState: String?

    package init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        sqlState = nil
    }

    /// A PostgreSQL failure with its SQLSTATE (Appendix A, "PostgreSQL Error Codes").
    package init(postgresState: String, message: String, sql: String? = nil) {
        extendedCode = 0
        self.message = message
        self.sql = sql
        sqlState = postgresState
    }

    /// The primary result code (the low 8 bits of the extended code).
    package var code: Int32 { extendedCode & 0xff }

    /// What kind of failure this is, for callers that map errors to exit codes.
    package var kind: Kind {
        if let sqlState { return Self.kind(sqlState: sqlState) }
        switch code {
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        case SQLITE_NOTADB: return .notADatabase
        case SQLITE_CORRUPT: return .corrupt
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH: return .readOnly
        case SQLITE_CANTOPEN: return .cannotOpen
        case SQLITE_FULL: return .full
        case SQLITE_IOERR: return .io
        case SQLITE_CONSTRAINT: return .constraint
        case SQLITE_INTERRUPT: return .interrupted
        case SQLITE_MISUSE: return .misuse
        default: return .other
        }
    }

    /// The kind of a PostgreSQL failure, by SQLSTATE class and code.
    static func kind(sqlState: String) -> Kind {
        switch sqlState {
        case "08001", "08004", "28000", "28P01", "3D000", "57P03": return .unavailable
        case "40001", "40P01", "55P03": return .busy
        // Each gets its own message (docs/roles/relay.md, "PostgreSQL faults"): never SQLite's file wording.
        case "57014": return .statementCancelled
        case "53100": return .full
        case "25006": return .readOnlyServer
        case "42501": return .permissionDenied
        case "XX001", "XX002": return .corrupt
        case "58030": return .io
        default: break
        }
        switch sqlState.prefix(2) {
        // Connection exceptions, and the server shutting down or crashing under a session ("57P01 admin_shutdown",
        // "57P02 crash_shutdown").
        case "08": return .connectionLost
        case "57" where sqlState.hasPrefix("57P0"): return .connectionLost
        case "23": return .constraint
        case "53": return .io
        default: return .other
        }
    }

    /// Coarse classes of store failures.
    package enum Kind: String, Sendable {
        case busy, notADatabase = "not-a-database", corrupt, readOnly = "read-only", cannotOpen = "cannot-open"
        case full, io, constraint, interrupted, misuse, newerSchema = "newer-schema", other
        /// The database server cannot be reached, refuses us, or has no such database (PostgreSQL only).
        case unavailable
        /// The connection to the database server broke during the pass (PostgreSQL only).
        case connectionLost = "connection-lost"
        /// The role lacks a privilege, or does not own what a migration changes (PostgreSQL `42501`).
        case permissionDenied = "permission-denied"
        /// The server accepts no writes: a standby, or a primary during a failover (PostgreSQL `25006`).
        case readOnlyServer = "read-only-server"
        /// The server cancelled a statement: `statement_timeout`, or an operator's `pg_cancel_backend` (`57014`).
        case statementCancelled = "statement-cancelled"
    }

    /// True for failures of the file itself (not of a statement): the store cannot be used as it is.
    package var isStoreUnusable: Bool {
        switch kind {
        case .notADatabase, .corrupt, .readOnly, .cannotOpen, .full, .io, .newerSchema, .permissionDenied: return true
        default: return false
        }
    }

    package var description: String {
        var text = sqlState.map { "PostgreSQL error \($0): \(message)" } ?? "SQLite error \(extendedCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }

    /// Errors of this layer that SQLite itself did not report.
    static func misuse(_ message: String, sql: String? = nil) -> StoreError {
        StoreError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }
}

/// The store file was written by a newer version of this program: it has migrations this binary does not know.
package struct NewerSchemaError: Error, CustomStringConvertible, Sendable {
    /// How many applied migrations this binary does not know (their names stay out of messages on purpose:
    /// they are harmless, but a count is all an operator needs).
    package let unknownMigrationCount: Int

    package var description: String {
        "the store was created or upgraded by a newer version of job (\(unknownMigrationCount) unknown migration(s)); upgrade job, or point --store at another file"
    }
}
