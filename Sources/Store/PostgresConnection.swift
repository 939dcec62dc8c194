import CPostgreSQL
import CSQLite
import Cryptography
import Foundation

/// One libpq connection to a PostgreSQL store: statements written with SQLite's `?`/`?N` placeholders, values
/// as `DatabaseValue`, failures as `StoreError` carrying the SQLSTATE.
///
/// Only `Database` uses it; nothing above the Store module sees a libpq type. Statements run many times are
/// prepared once per connection (per SQL text and parameter types). Results are read in text format and decoded
/// by column type, so a `bigint` comes back as `.integer`, a `bytea` as `.blob`, a `double precision` as `.real`.
/// A query's rows are materialised (libpq's `PQexecPrepared` returns them all); the relay's queries are bounded.
final class PostgresConnection {
    private let connection: OpaquePointer
    private let canceller: OpaquePointer?
    /// Statement names by `PostgresConnection.cacheKey`.
    private var prepared: [String: String] = [:]
    /// Set once libpq failed on its own (no SQLSTATE from the server): the connection is taken as lost even while
    /// `PQstatus` still says `CONNECTION_OK`, as it does when the server closed the socket after an immediate
    /// shutdown's WARNING.
    private var lost = false
    /// Set by `interrupt()` (from any thread, under `interruptLock`): a `57014` that follows is this process's own
    /// cancel, not the server's `statement_timeout`.
    private var interruptRequested = false
    private let interruptLock = NSLock()

    /// What one statement returned.
    struct Result {
        var columnNames: [String] = []
        var rows: [[DatabaseValue]] = []
        /// Rows changed by an INSERT, UPDATE or DELETE (`PQcmdTuples`); 0 for other statements.
        var changes = 0
    }

    /// Connects with `conninfo` (a `postgresql://` URI or a `key=value` string, `service=` included).
    ///
    /// "If expand_dbname is non-zero, the value for the first dbname keyword is checked to see if it is a
    /// connection string. If so, it is 'expanded' into the individual connection parameters extracted from the
    /// string. … Any previous keywords are overridden by the expanded ones" — PQconnectdbParams. So the defaults
    /// given before `dbname` (a connect timeout, the application name) yield to whatever the operator wrote.
    init(conninfo: String, connectTimeoutSeconds: Int) throws {
        let secrets = try Self.secrets(in: conninfo)
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
        let values = [String(connectTimeoutSeconds), "job", conninfo]
        let keywordPointers = keywords.map { strdup($0) } + [nil]
        let valuePointers = values.map { strdup($0) } + [nil]
        defer { for pointer in keywordPointers + valuePointers { free(pointer) } }
        let keywordArray = keywordPointers.map { UnsafePointer($0) }
        let valueArray = valuePointers.map { UnsafePointer($0) }
        guard let connection = PQconnectdbParams(keywordArray, valueArray, 1) else {
            throw StoreError(postgresState: "08000", message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            // libpq's own text names hosts, socket paths, users and databases (and, for some malformed strings,
            // quotes them whole): only a fixed reason read from it is shown.
            let message = Self.connectFailureReason(Self.redacting(secrets, in: Self.firstLine(PQerrorMessage(connection))))
            PQfinish(connection)
            // An address, a refused or timed-out connection, a failed authentication, a missing database: the
            // service is not there for us. The SQLSTATE class 08 (connection exception) marks it.
            throw StoreError(postgresState: "08001", message: message)
        }
        self.connection = connection
        // libpq's default notice processor prints every NOTICE and WARNING the server sends to stderr ("WARNING:
        // terminating connection due to immediate shutdown command"), bypassing the log; job's stderr carries only
        // log lines and one-line errors, so they are dropped (what they announce surfaces as the next statement's
        // error, with its own line).
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        canceller = PQgetCancel(connection)
        // Every session of the store speaks UTC and plain strings (times are stored as Unix milliseconds anyway),
        // and keeps the server's notices ("relation … already exists, skipping") off our stderr: libpq's default
        // notice processor prints them, and job's stderr is for log lines and one-line errors.
        try execute("SET TIME ZONE 'UTC'; SET standard_conforming_strings = on; SET client_min_messages = warning")
    }

    deinit {
        if let canceller { PQfreeCancel(canceller) }
        PQfinish(connection)
    }

    /// Runs a script of one or more statements without parameters (a migration, `BEGIN`, `COMMIT`).
    func execute(_ sql: String) throws {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs one statement with `values` bound to its placeholders.
    func run(_ sql: String, _ values: [DatabaseValue]) throws -> Result {
        let (text, count) = try Self.numberedPlaceholders(sql)
        guard count == values.count else {
            throw StoreError.misuse("expected \(count) argument(s), got \(values.count)", sql: sql)
        }
        var types: [Oid] = []
        var formats: [Int32] = []
        var lengths: [Int32] = []
        var buffers: [[UInt8]?] = []
        for value in values {
            switch value {
            case .null: types.append(0); formats.append(0); lengths.append(0); buffers.append(nil)
            // int8 always: stored times are Unix milliseconds, past int4's range.
            case .integer(let v): types.append(20); formats.append(0); lengths.append(0); buffers.append(Array(String(v).utf8) + [0])
            case .real(let v): types.append(701); formats.append(0); lengths.append(0); buffers.append(Array("\(v)".utf8) + [0])
            // Text goes as type "unknown": PostgreSQL takes it as whatever its context needs, as a quoted literal.
            case .text(let v): types.append(0); formats.append(0); lengths.append(0); buffers.append(Array(v.utf8) + [0])
            // bytea in binary format: the bytes as they are, no escaping.
            case .blob(let v): types.append(17); formats.append(1); lengths.append(Int32(v.count)); buffers.append(v)
            }
        }
        let key = Self.cacheKey(sql, types)
        let name: String
        if let known = prepared[key] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            let result = PQprepare(connection, name, text, Int32(types.count), types)
            defer { PQclear(result) }
            try check(result, sql: sql)
            prepared[key] = name
        }
        let result = withParameterPointers(buffers) { pointers in
            PQexecPrepared(connection, name, Int32(values.count), pointers, lengths, formats, 0)
        }
        defer { PQclear(result) }
        try check(result, sql: sql)
        return try Self.decode(result!)
    }

    /// Asks the statement running on this connection to stop (safe from another thread): "PQcancel … can be
    /// invoked from a signal handler" and from another thread.
    func interrupt() {
        guard let canceller else { return }
        interruptLock.withLock { interruptRequested = true }
        var buffer = [CChar](repeating: 0, count: 256)
        _ = PQcancel(canceller, &buffer, Int32(buffer.count))
    }

    /// True when the server closed this connection or it was lost.
    var isBroken: Bool { lost || PQstatus(connection) != CONNECTION_OK }

    /// True when the open transaction block was aborted by a failed statement (only ROLLBACK is accepted now).
    var isInFailedTransaction: Bool { PQtransactionStatus(connection) == PQTRANS_INERROR }

    /// True while a transaction block is open on the server side (including one aborted by an error).
    var isInServerTransaction: Bool {
        let status = PQtransactionStatus(connection)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    // MARK: Results and errors

    private func check(_ result: OpaquePointer?, sql: String) throws {
        // A failure that carries no SQLSTATE is libpq's own, not the server's: the connection failed (a closed socket,
        // an I/O error, "server closed the connection unexpectedly"), whatever PQstatus says. 08006 marks it lost.
        guard let result else {
            lost = true
            throw StoreError(postgresState: "08006", message: Self.firstLine(PQerrorMessage(connection)), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            // The primary message only: DETAIL lines can quote the values of a row (a duplicate key's value).
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            let message = primary ?? Self.firstLine(PQerrorMessage(connection))
            // No SQLSTATE: libpq's own failure, the server went away under the statement.
            if state == nil { lost = true }
            // A cancel this process asked for is an interruption (SQLite's SQLITE_INTERRUPT), not a server's timeout.
            if state == "57014", interruptLock.withLock({ () -> Bool in defer { interruptRequested = false }; return interruptRequested }) {
                throw StoreError(extendedCode: SQLITE_INTERRUPT, message: "the statement was interrupted", sql: sql)
            }
            throw StoreError(postgresState: state ?? "08006", message: message, sql: sql)
        }
    }

    private static func decode(_ result: OpaquePointer) throws -> Result {
        var decoded = Result()
        decoded.changes = Int(String(cString: PQcmdTuples(result))) ?? 0
        let columns = Int(PQnfields(result))
        guard columns > 0 else { return decoded }
        decoded.columnNames = (0..<columns).map { String(cString: PQfname(result, Int32($0))) }
        let types = (0..<columns).map { PQftype(result, Int32($0)) }
        let rowCount = Int(PQntuples(result))
        decoded.rows.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values: [DatabaseValue] = []
            values.reserveCapacity(columns)
            for column in 0..<columns {
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 { values.append(.null); continue }
                let length = Int(PQgetlength(result, Int32(row), Int32(column)))
                let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, Int32(row), Int32(column)), count: length)
                values.append(try value(bytes, type: types[column]))
            }
            decoded.rows.append(values)
        }
        return decoded
    }

    /// A text-format value of column type `type` as the storage class SQLite would have given it.
    static func value(_ bytes: UnsafeRawBufferPointer, type: Oid) throws -> DatabaseValue {
        let text = String(decoding: bytes, as: UTF8.self)
        switch type {
        case 16:  // bool
            return .integer(text == "t" ? 1 : 0)
        case 20, 21, 23, 26:  // int8, int2, int4, oid
            guard let v = Int64(text) else { throw StoreError.misuse("an integer column held \(bytes.count) unreadable bytes") }
            return .integer(v)
        case 700, 701:  // float4, float8
            guard let v = Double(text) else { throw StoreError.misuse("a real column held \(bytes.count) unreadable bytes") }
            return .real(v)
        case 1700:  // numeric: sum() and avg() of integers; whole numbers stay integers, as in SQLite
            if let v = Int64(text) { return .integer(v) }
            guard let v = Double(text) else { throw StoreError.misuse("a numeric column held \(bytes.count) unreadable bytes") }
            return .real(v)
        case 17:  // bytea, text format: "\x" then two hex digits a byte (bytea_output = hex, the default)
            guard let decoded = decodeHexBytea(bytes) else { throw StoreError.misuse("a bytea column held \(bytes.count) unreadable bytes") }
            return .blob(decoded)
        default:
            return .text(text)
        }
    }

    static func decodeHexBytea(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        guard bytes.count >= 2, bytes[0] == 0x5c, bytes[1] == 0x78 else { return nil }
        return Hex.bytes(bytes.dropFirst(2))
    }

    /// The values in `conninfo` no message may show (its password), parsed as libpq parses it. A string libpq
    /// cannot parse fails here with a fixed message: libpq's own ("invalid URI query parameter: …", "missing "="
    /// after …") quotes the string, password included.
    static func secrets(in conninfo: String) throws -> [String] {
        var failure: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &failure) else {
            if let failure { PQfreemem(failure) }
            throw StoreError(postgresState: "08001", message: "the store location is not a valid PostgreSQL connection string; give a postgresql:// URI or keyword=value pairs")
        }
        defer { PQconninfoFree(options) }
        var secrets: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val, value.pointee != 0 { secrets.append(String(cString: value)) }
            option += 1
        }
        return secrets
    }

    /// `message` with every occurrence of each of `secrets` replaced.
    static func redacting(_ secrets: [String], in message: String) -> String {
        secrets.reduce(message) { $0.replacingOccurrences(of: $1, with: "(password)") }
    }

    /// A fixed reason for a failed connection, from libpq's message (which is never shown itself).
    static func connectFailureReason(_ libpqMessage: String) -> String {
        let text = libpqMessage.lowercased()
        // After "failed: " comes the server's or the socket layer's own reason (the part before names the socket
        // or host, which may contain any word).
        let reason = text.range(of: "failed: ").map { String(text[$0.upperBound...]) } ?? text
        let reasons: [(String, String)] = [
            ("password authentication failed", "the server refused the credentials"),
            ("no password supplied", "the server asks for a password and none was given (PGPASSFILE, ~/.pgpass)"),
            ("authentication failed", "the server refused the credentials"),
            ("pg_hba.conf", "the server's pg_hba.conf admits no such connection"),
            ("role \"", "the server has no such role"),
            ("database \"", "the server has no such database"),
            ("definition of service", "the service name is not defined in the service file (PGSERVICEFILE, ~/.pg_service.conf)"),
            ("service file", "the service file cannot be read (PGSERVICEFILE, ~/.pg_service.conf)"),
            ("timeout expired", "connecting timed out"),
            ("does not match host name", "the server's TLS certificate does not name the host connected to (sslmode=verify-full)"),
            ("root certificate file", "no root certificate to check the server's TLS certificate against (sslrootcert, ~/.postgresql/root.crt)"),
            ("certificate verify failed", "the server's TLS certificate does not verify against the root certificate (sslrootcert)"),
            ("translate host name", "the host name does not resolve"),
            ("starting up", "the server is starting up"),
            ("shutting down", "the server is shutting down"),
            ("too many", "the server has no connection slot left"),
            ("ssl", "the TLS connection to the server failed"),
            ("no such file or directory", "no server answers there"),
            ("connection refused", "no server answers there"),
        ]
        return reasons.first { reason.contains($0.0) || ($0.0 == "definition of service" && text.hasPrefix($0.0)) }?.1
            ?? "the server could not be reached"
    }

    static func firstLine(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown libpq error" }
        let text = String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.split(separator: "\n").first.map(String.init) ?? "unknown libpq error"
    }

    private static func cacheKey(_ sql: String, _ types: [Oid]) -> String {
        types.isEmpty ? sql : sql + "\u{0}" + types.map(String.init).joined(separator: ",")
    }

    private func withParameterPointers<T>(_ buffers: [[UInt8]?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        // Copies the buffers into stable allocations for the duration of the call.
        let pointers: [UnsafeMutablePointer<CChar>?] = buffers.map { buffer in
            guard let buffer else { return nil }
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(buffer.count, 1))
            buffer.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: buffer.count) }
            }
            return pointer
        }
        defer { for pointer in pointers { pointer?.deallocate() } }
        let constant = pointers.map { UnsafePointer($0) }
        return constant.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    // MARK: Placeholders

    /// Rewrites SQLite's placeholders to PostgreSQL's: `?` is the next number after the largest used so far, `?N`
    /// is `$N` (as SQLite numbers them). Quoted strings, quoted identifiers and comments are left alone.
    /// Returns the text and the number of parameters.
    static func numberedPlaceholders(_ sql: String) throws -> (String, Int) {
        let bytes = Array(sql.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        var highest = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x27, 0x22:  // ' or ": copy through the closing quote (a doubled quote stays inside)
                out.append(byte)
                index += 1
                while index < bytes.count {
                    out.append(bytes[index])
                    if bytes[index] == byte {
                        if index + 1 < bytes.count && bytes[index + 1] == byte { out.append(byte); index += 2; continue }
                        index += 1
                        break
                    }
                    index += 1
                }
            case 0x2d where index + 1 < bytes.count && bytes[index + 1] == 0x2d:  // -- comment to end of line
                while index < bytes.count && bytes[index] != 0x0a { out.append(bytes[index]); index += 1 }
            case 0x3f:  // ?
                index += 1
                var digits = 0
                var number = 0
                while index < bytes.count, (0x30...0x39).contains(bytes[index]), digits < 6 {
                    number = number * 10 + Int(bytes[index] - 0x30)
                    digits += 1
                    index += 1
                }
                if digits == 0 { number = highest + 1 }
                guard number >= 1 else { throw StoreError.misuse("placeholder ?0 is not valid", sql: sql) }
                highest = max(highest, number)
                out.append(contentsOf: Array("$\(number)".utf8))
            default:
                out.append(byte)
                index += 1
            }
        }
        return (String(decoding: out, as: UTF8.self), highest)
    }
}
