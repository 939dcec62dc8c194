import Runner

/// The options every command accepts (DESIGN §3), taken from anywhere on the command line before `--`,
/// with their environment fallbacks (`JOB_STORE`, `JOB_NOW`, `JOB_METRICS_DIR`, `JOB_LOG_FORMAT`, `JOB_LOG_LEVEL`).
struct GlobalOptions {
    var store: String?
    var now: String?
    var json = false
    var logFormat: String?
    var metricsDir: String?
    var help = false
    var version = false
    /// The words left for the command: its name and its own options.
    var rest: [String] = []

    static let specs: [OptionSpec] = [
        .value("--store", "STORE", "the store: an SQLite file (default under $STATE_DIRECTORY or $XDG_STATE_HOME), or for the relay role a PostgreSQL connection string, postgresql://… or service=NAME (JOB_STORE)"),
        .value("--now", "TIME", "emulated clock, RFC 3339 or @<unix seconds> (JOB_NOW)"),
        .flag("--json", "print exactly one JSON value on stdout"),
        .value("--log-format", "text|json", "log line format on stderr (JOB_LOG_FORMAT; default text, logfmt)"),
        .value("--metrics-dir", "DIR", "write <job>.prom for node_exporter after each pass (JOB_METRICS_DIR)"),
        .flag("--help", "show help (also -h)"),
        .flag("--version", "print the version and exit"),
    ]

    init(parsing tokens: [String]) throws {
        var index = 0
        var passthrough = false
        func value(_ name: String) throws -> String {
            guard index < tokens.count else { throw JobError.usage("option \(name) needs a value") }
            let value = tokens[index]
            index += 1
            return value
        }
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if passthrough { rest.append(token); continue }
            var name = token
            var inline: String?
            if token.hasPrefix("--"), let eq = token.firstIndex(of: "=") {
                name = String(token[..<eq])
                inline = String(token[token.index(after: eq)...])
            }
            switch name {
            case "--": passthrough = true; rest.append(token)
            case "--store": store = try inline ?? value(name)
            case "--now": now = try inline ?? value(name)
            case "--log-format": logFormat = try inline ?? value(name)
            case "--metrics-dir": metricsDir = try inline ?? value(name)
            case "--json":
                guard inline == nil else { throw JobError.usage("option --json takes no value") }
                json = true
            case "--help", "-h": help = true
            // Only before the command: `mesh builds add --version V` has an option of that name.
            case "--version" where rest.isEmpty && inline == nil: version = true
            default: rest.append(token)
            }
        }
    }

    /// Resolves the options against the environment into an `Invocation`.
    func invocation(environment: [String: String], output: TextOutput, errorOutput: @escaping @Sendable (String) -> Void) throws -> Invocation {
        // --metrics-dir wins over JOB_METRICS_DIR for everything that reads it (passes and `doctor`).
        var environment = environment
        if let metricsDir { environment["JOB_METRICS_DIR"] = metricsDir }
        func env(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        let storePath: String
        if let given = store ?? env("JOB_STORE") { storePath = given }
        else { storePath = try Invocation.defaultStorePath(environment: environment) }
        guard !storePath.isEmpty else { throw JobError.usage("--store needs a path") }
        var clock = Clock.system
        if let text = now ?? env("JOB_NOW") {
            guard let instant = Clock.parse(text) else {
                throw JobError.usage("--now takes an RFC 3339 time (2026-03-01T00:00:00Z) or @<unix seconds>")
            }
            clock = .fixed(instant)
        }
        // The option is a usage error (64); the environment variable, like JOB_LOG_LEVEL, is configuration (78).
        let format: Logger.Format
        if let logFormat {
            guard let parsed = Logger.Format(rawValue: logFormat) else { throw JobError.usage("--log-format must be text or json") }
            format = parsed
        } else {
            guard let parsed = Logger.Format(rawValue: env("JOB_LOG_FORMAT") ?? "text") else {
                throw JobError.configuration("log-format", "JOB_LOG_FORMAT must be text or json")
            }
            format = parsed
        }
        let levelText = env("JOB_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelText) else { throw JobError.configuration("log-level", "JOB_LOG_LEVEL must be debug, info, warn or error") }
        return Invocation(storePath: storePath, clock: clock, jsonOutput: json, logFormat: format, logLevel: level,
                          metricsDirectory: metricsDir ?? env("JOB_METRICS_DIR"), environment: environment, output: output,
                          errorOutput: errorOutput)
    }
}
