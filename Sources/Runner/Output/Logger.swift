import Foundation

/// Writes one event per line to stderr, as logfmt (`ts= level= job= event= …`) or JSON (docs/design.md §5).
///
/// Jobs receive a logger in their context; there is no global one. Fields are `LogValue`s, which cannot hold
/// free text, so a log line carries fixed event names, categories, counts, durations and status codes only.
package final class Logger: Sendable {
    /// Severity, lowest first.
    package enum Level: String, Sendable, Comparable, CaseIterable, LogWord {
        case debug, info, warn, error
        package static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
        private var rank: Int { Level.allCases.firstIndex(of: self)! }
    }

    /// Line format.
    package enum Format: String, Sendable, CaseIterable { case text, json }

    /// The job or command name every line carries.
    package let job: String
    package let format: Format
    package let minimumLevel: Level
    /// Prefix each line with its syslog priority (`<3>` error … `<7>` debug), as sd-daemon(3) describes, so
    /// journald records each line at its level. Set when stderr is the journal (`JOURNAL_STREAM`).
    package let priorityPrefix: Bool
    private let sink: @Sendable (String) -> Void
    private let lock = NSLock()

    /// A logger writing to `sink` (stderr by default).
    package init(job: String, format: Format = .text, minimumLevel: Level = .info, priorityPrefix: Bool = false,
                sink: (@Sendable (String) -> Void)? = nil) {
        self.job = job
        self.format = format
        self.minimumLevel = minimumLevel
        self.priorityPrefix = priorityPrefix
        self.sink = sink ?? { line in FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// The same destination and format, for another job name.
    package func named(_ job: String) -> Logger {
        Logger(job: job, format: format, minimumLevel: minimumLevel, priorityPrefix: priorityPrefix, sink: sink)
    }

    /// True when stderr is the systemd journal: `JOURNAL_STREAM` names the device and inode of fd 2
    /// ("compare the device and inode numbers … with the ones of stderr", systemd.exec(5)).
    package static func stderrIsJournal(environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// The sd-daemon priority prefix of `level`: SD_ERR `<3>`, SD_WARNING `<4>`, SD_INFO `<6>`, SD_DEBUG `<7>`.
    package static func priority(_ level: Level) -> String {
        switch level {
        case .error: return "<3>"
        case .warn: return "<4>"
        case .info: return "<6>"
        case .debug: return "<7>"
        }
    }

    /// The last line of a failed command on stderr: `job: message` (plus the usage hint), or with the JSON
    /// format one JSON object. The message is a `JobError`'s, which never carries an identifier or secret.
    package static func failureLine(command: String?, _ failure: JobError, format: Format, priorityPrefix: Bool, usageHint: String?) -> String {
        let prefix = priorityPrefix ? priority(.error) : ""
        switch format {
        case .text:
            var text = prefix + "job: \(command.map { "\($0) failed: " } ?? "")\(failure.message)\n"
            if let usageHint { text += usageHint.split(separator: "\n").map { prefix + $0 + "\n" }.joined() }
            return text
        case .json:
            var parts = ["\"ts\":\(JSON.quote(Date().rfc3339))", "\"level\":\"error\"", "\"job\":\(JSON.quote(command ?? "job"))",
                         "\"event\":\"command.failed\"", "\"category\":\(JSON.quote(failure.category))",
                         "\"exit_code\":\(failure.exitCode.rawValue)", "\"message\":\(JSON.quote(failure.message))"]
            if let usageHint { parts.append("\"usage\":\(JSON.quote(usageHint))") }
            return prefix + "{" + parts.joined(separator: ",") + "}\n"
        }
    }

    package func debug(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.debug, event, fields) }
    package func info(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.info, event, fields) }
    package func warn(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.warn, event, fields) }
    package func error(_ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:]) { log(.error, event, fields) }

    /// Logs `fields` then `counts` as fields of one event (count names come from the job's fixed count keys).
    package func log(_ level: Level, _ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue> = [:], counts: Counts) {
        guard level >= minimumLevel else { return }
        write(level, "\(event)", fields.map { ("\($0.key)", $0.value) } + counts.entries.map { ($0.key, LogValue.integer(Int64($0.value))) })
    }

    package func log(_ level: Level, _ event: StaticString, _ fields: KeyValuePairs<StaticString, LogValue>) {
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
        sink(priorityPrefix ? Logger.priority(level) + line : line)
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
