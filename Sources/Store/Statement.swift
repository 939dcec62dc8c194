import CSQLite
import CShims

/// A prepared statement: bind arguments, step through rows; finalized when the last reference goes away.
///
/// Statements belong to the `Database` that prepared them and must not outlive it or cross threads.
package final class Statement {
    let handle: OpaquePointer
    /// The SQL text as prepared (placeholders, never values).
    package let sql: String
    unowned let database: Database

    init(database: Database, sql: String) throws {
        self.database = database
        self.sql = sql
        var statement: OpaquePointer?
        // "If the caller knows that the supplied string is nul-terminated, then there is a small performance
        // advantage to passing an nByte parameter that is the number of bytes in the input string *including*
        // the nul-terminator." — sqlite3_prepare_v2 documentation. Swift strings are bridged nul-terminated.
        let rc = sqlite3_prepare_v2(database.handle, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw database.error(rc, sql: sql)
        }
        handle = statement
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and binds `arguments` to its `?` parameters, in order.
    package func bind(_ arguments: [any DatabaseValueConvertible]) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count == expected else {
            throw StoreError.misuse("expected \(expected) argument(s), got \(arguments.count)", sql: sql)
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch argument.databaseValue {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                rc = v.withCString { shim_sqlite3_bind_text_transient(handle, index, $0, Int32(strlen($0))) }
            case .blob(let v):
                rc = v.withUnsafeBytes { shim_sqlite3_bind_blob_transient(handle, index, $0.baseAddress, Int32($0.count)) }
            }
            guard rc == SQLITE_OK else { throw database.error(rc, sql: sql) }
        }
    }

    /// Advances to the next row; false when the statement is done.
    package func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.error(rc, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Column names of the result.
    package var columnNames: [String] {
        (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
    }

    /// The value of column `index` of the current row.
    package func value(at index: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            // "The pointer returned by sqlite3_column_blob() for a zero-length BLOB is a NULL pointer."
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let bytes = sqlite3_column_blob(handle, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    /// The current row, materialised.
    package func row(columnNames names: [String]) -> Row {
        Row(columnNames: names, values: (0..<Int32(names.count)).map { value(at: $0) })
    }

    /// Resets the statement so it can run again, keeping its bindings.
    package func reset() { sqlite3_reset(handle) }
}
