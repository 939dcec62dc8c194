import CSQLite

/// A failure reported by the store: the SQLite result code, SQLite's message and the SQL text.
///
/// The bound values are never part of an error, so an error can be logged or shown without leaking
/// an identifier or a secret. `sql` is the statement as written by the program (with `?` placeholders).
public struct StoreError: Error, CustomStringConvertible, Sendable {
    /// The extended SQLite result code (`SQLITE_BUSY_SNAPSHOT`, `SQLITE_CONSTRAINT_UNIQUE`, …).
    public let extendedCode: Int32
    /// SQLite's message (`sqlite3_errmsg`), or this layer's own for errors that are not SQLite's.
    public let message: String
    /// The SQL being run, if any.
    public let sql: String?

    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (the low 8 bits of the extended code).
    public var code: Int32 { extendedCode & 0xff }

    /// What kind of failure this is, for callers that map errors to exit codes.
    public var kind: Kind {
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

    /// Coarse classes of store failures.
    public enum Kind: String, Sendable {
        case busy, notADatabase = "not-a-database", corrupt, readOnly = "read-only", cannotOpen = "cannot-open"
        case full, io, constraint, interrupted, misuse, newerSchema = "newer-schema", other
    }

    /// True for failures of the file itself (not of a statement): the store cannot be used as it is.
    public var isStoreUnusable: Bool {
        switch kind {
        case .notADatabase, .corrupt, .readOnly, .cannotOpen, .full, .io, .newerSchema: return true
        default: return false
        }
    }

    public var description: String {
        var text = "SQLite error \(extendedCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }

    /// Errors of this layer that SQLite itself did not report.
    static func misuse(_ message: String, sql: String? = nil) -> StoreError {
        StoreError(extendedCode: SQLITE_MISUSE, message: message, sql: sql)
    }
}

/// The store file was written by a newer version of this program: it has migrations this binary does not know.
public struct NewerSchemaError: Error, CustomStringConvertible, Sendable {
    /// How many applied migrations this binary does not know (their names stay out of messages on purpose:
    /// they are harmless, but a count is all an operator needs).
    public let unknownMigrationCount: Int

    public var description: String {
        "the store was created or upgraded by a newer version of job (\(unknownMigrationCount) unknown migration(s)); upgrade job, or point --store at another file"
    }
}
