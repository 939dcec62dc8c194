import Foundation

/// Writes one event per line to stderr, as logfmt (`ts= level= job= event= …`) or JSON (DESIGN §5).
///
/// Jobs receive a logger in their context; there is no global one. Fields are `LogValue`s, which cannot hold
/// free text, so a log line carries fixed event names, categories, counts, durations and status codes only.
public final class Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: String, Sendable, Comparable, CaseIterable, LogWord {
        case debug, info, warn, error
        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
        private var rank: Int { Level.allCases.firstIndex(of: self)! }
    }

    /// Line format.
    public enum Format: String, Sendable, CaseIterable { case text, json }

    /// The job or command name every line carries.
    public let job: String
    public let format: Format
    public let minimumLevel: Level
    private let sink: @Sendable (String) -> Void
    private let lock = NSLock()

    /// A logger writing to `sink` (stderr by default).
    public init(job: String, format: Format = .text, minimumLevel: Level = .info, sink: (@Sendable (String) -> Void)? = nil) {
        self.job = job
        self.format = format
        self.minimumLevel = minimumLevel
        self.sink = sink ?? { line in FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// The same destination and format, for another job name.
    public func named(_ job: String) -> Logger { Logger(job: job, format: format, minimumLevel: minimumLevel, sink: sink) }

    public func debug(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.debug, event, fields) }
    public func info(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.info, event, fields) }
    public func warn(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.warn, event, fields) }
    public func error(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.error, event, fields) }

    /// Logs `counts` as fields of one event (names come from the job's fixed count keys).
    public func log(_ level: Level, _ event: StaticString, counts: Counts) {
        guard level >= minimumLevel else { return }
        write(level, "\(event)", counts.entries.map { ($0.key, LogValue.integer(Int64($0.value))) })
    }

    public func log(_ level: Level, _ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue>) {
        guard level >= minimumLevel else { return }
        write(level, "\(event)", fields.map { ("\($0.key)", $0.value) })
    }

    private func write(_ level: Level, _ event: String, _ fields: [(String, LogValue)]) {
        let ts = Date().rfc3339
        let line: String
        switch format {
        case .text:
            var parts = ["ts=\(ts)", "level=\(level.rawValue)", "job=\(Logger.logfmtValue(job))", "event=\(Logger.logfmtValue(event))"]
            for (key, value) in fields { parts.append("\(key)=\(Logger.logfmtValue(value))") }
            line = parts.joined(separator: " ") + "\n"
        case .json:
            var parts = ["\"ts\":\(JSON.quote(ts))", "\"level\":\(JSON.quote(level.rawValue))", "\"job\":\(JSON.quote(job))", "\"event\":\(JSON.quote(event))"]
            for (key, value) in fields { parts.append("\(JSON.quote(key)):\(Logger.jsonValue(value))") }
            line = "{" + parts.joined(separator: ",") + "}\n"
        }
        lock.lock()
        defer { lock.unlock() }
        sink(line)
    }

    static func logfmtValue(_ value: LogValue) -> String {
        switch value {
        case .integer(let v): return String(v)
        case .double(let v): return String(format: "%.3f", v)
        case .bool(let v): return v ? "true" : "false"
        case .word(let w): return logfmtValue(w.text)
        }
    }

    static func logfmtValue(_ word: String) -> String {
        let needsQuotes = word.isEmpty || word.contains { $0 == " " || $0 == "=" || $0 == "\"" || $0.isNewline }
        return needsQuotes ? JSON.quote(word) : word
    }

    static func jsonValue(_ value: LogValue) -> String {
        switch value {
        case .integer(let v): return String(v)
        case .double(let v): return v.isFinite ? String(format: "%.3f", v) : "null"
        case .bool(let v): return v ? "true" : "false"
        case .word(let w): return JSON.quote(w.text)
        }
    }
}
