import Foundation
import Runner
import Store

/// The `job` executable: parses global options, dispatches to a job, a module command or a built-in, and
/// turns every failure into a one-line message and its documented exit code.
package struct CommandLineApp {
    package let catalog: Catalog

    package init(catalog: Catalog) { self.catalog = catalog }

    /// The built-in commands, which run without a module: each a `BuiltinCommand` value.
    static let builtinCommands: [any BuiltinCommand] = [
        ListCommand(), StatusCommand(), MigrateCommand(), DeploymentCommand(), VersionCommand(), CompletionsCommand(), ManpageCommand(),
        ReferenceCommand(),
    ]

    /// Every built-in as help, the reference, the completions and the man page list them, `help` among them.
    static let builtins: [(name: String, summary: String, usage: String)] = {
        var rows = builtinCommands.map { (name: $0.name, summary: $0.summary, usage: $0.usage) }
        rows.insert((name: "help", summary: "show help for job or for a command", usage: "[COMMAND]"), at: 3)
        return rows
    }()

    /// Runs `job` with `arguments` (without the program name) and returns the exit code.
    package func run(arguments: [String], environment: [String: String], output: TextOutput = StandardOutput(),
                    errorOutput: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) -> ExitCode {
        do {
            let globals = try GlobalOptions(parsing: arguments)
            if try writeHelpOrVersion(globals, output: output) { return .success }
            let invocation = try globals.invocation(environment: environment, output: output, errorOutput: errorOutput)
            return try dispatch(globals.rest, invocation: invocation)
        } catch {
            return report(error, arguments: arguments, environment: environment, output: output, errorOutput: errorOutput)
        }
    }

    /// `--version`, `job help …` and `--help`, which need no store and run whatever the other options say;
    /// false when the words name something else. No words at all is a usage error.
    private func writeHelpOrVersion(_ globals: GlobalOptions, output: TextOutput) throws -> Bool {
        let words = globals.rest
        let help = Help(catalog: catalog)
        if globals.version && !globals.help {
            output.write(VersionCommand.text(json: globals.json))
            return true
        }
        guard let first = words.first else {
            if globals.help { output.write(help.general()); return true }
            throw JobError.usage("no command given")
        }
        if first == "help" {
            if globals.json && words.count == 1 {
                output.write(help.catalogJSON().rendered() + "\n")
            } else if globals.json {
                output.write(try help.commandJSON(for: Array(words.dropFirst())).rendered() + "\n")
            } else {
                output.write(try help.text(for: Array(words.dropFirst())))
            }
            return true
        }
        if globals.help {
            output.write(try help.text(for: words.filter { !$0.hasPrefix("-") }))
            return true
        }
        return false
    }

    /// Runs what `words` name: a built-in, a job's pass, or a module command.
    private func dispatch(_ words: [String], invocation: Invocation) throws -> ExitCode {
        let first = words[0]
        let tokens = Array(words.dropFirst())
        if let builtin = Self.builtinCommands.first(where: { $0.name == first }) {
            let arguments = try Arguments(parsing: tokens, options: builtin.options, positionals: builtin.positionals, commandName: builtin.name)
            try builtin.run(BuiltinContext(catalog: catalog, invocation: invocation, arguments: arguments))
            return .success
        }
        if let job = catalog.job(named: first) {
            try invocation.requireSQLiteStore(for: job.name, runsOnPostgreSQL: job.runsOnPostgreSQL)
            return PassRunner(catalog: catalog, invocation: invocation).run(job, tokens: tokens)
        }
        let (command, consumed) = try resolveCommand(words)
        let arguments = try Arguments(parsing: Array(words.dropFirst(consumed)), options: command.options,
                                      positionals: command.positionals, commandName: command.displayName)
        try invocation.requireSQLiteStore(for: command.displayName, runsOnPostgreSQL: command.runsOnPostgreSQL)
        for library in command.libraries { try library.require() }
        // `doctor` reports a store it cannot write instead of failing to open it.
        let database = try command.path == ["doctor"] ? invocation.openStoreForReport(catalog) : invocation.openStore(catalog)
        let context = invocation.context(name: command.displayName, database: database, arguments: arguments, dryRun: false, catalog: catalog)
        try command.run(context)
        return .success
    }

    /// A failure as its one line on stderr (with the usage hint after a usage error) and, with `--json`, one JSON
    /// value on stdout unless the command already printed it; returns its exit code.
    private func report(_ error: any Error, arguments: [String], environment: [String: String], output: TextOutput,
                        errorOutput: @Sendable (String) -> Void) -> ExitCode {
        let failure = StoreFailure.jobError(for: error)
        let hint = failure.exitCode == .usage
            ? "Usage: job [--store STORE] [--now TIME] [--json] [--log-format text|json] [--metrics-dir DIR] COMMAND [OPTIONS]\nRun 'job help' for the commands." : nil
        errorOutput(Logger.failureLine(command: nil, failure, format: CommandLineApp.logFormat(arguments, environment),
                                       priorityPrefix: Logger.stderrIsJournal(environment: environment), usageHint: hint))
        if CommandLineApp.wantsJSON(arguments) && !failure.printedAsJSON { output.write(CommandLineApp.failureJSON(failure).rendered() + "\n") }
        return failure.exitCode
    }

    /// The log format asked for, read leniently for the failure line (a bad value falls back to text).
    package static func logFormat(_ arguments: [String], _ environment: [String: String]) -> Logger.Format {
        let words = Array(arguments.prefix(while: { $0 != "--" }))
        var asked = environment["JOB_LOG_FORMAT"]
        for (index, word) in words.enumerated() {
            if word == "--log-format", index + 1 < words.count { asked = words[index + 1] }
            if word.hasPrefix("--log-format=") { asked = String(word.dropFirst("--log-format=".count)) }
        }
        return asked.flatMap(Logger.Format.init(rawValue:)) ?? .text
    }

    /// True when `--json` was given before any `--`: then even a failure prints one JSON value on stdout.
    static func wantsJSON(_ arguments: [String]) -> Bool {
        arguments.prefix(while: { $0 != "--" }).contains("--json")
    }

    /// The one JSON value a failed command prints with `--json` (README "JSON output").
    static func failureJSON(_ failure: JobError) -> JSON {
        .object([("error", ["category": .string(failure.category), "message": .string(failure.message)]),
                 ("exit_code", .number(failure.exitCode.rawValue)), ("schema_version", .number(JSONSchema.version))])
    }

    /// Finds the module command named by the longest prefix of `words`.
    func resolveCommand(_ words: [String]) throws -> (any Command, Int) {
        let candidates = catalog.commands.filter { $0.path.count <= words.count && Array(words.prefix($0.path.count)) == $0.path }
        if let best = candidates.max(by: { $0.path.count < $1.path.count }) { return (best, best.path.count) }
        let group = catalog.commands.filter { $0.path.count > 1 && $0.path[0] == words[0] }
        if !group.isEmpty {
            // The deepest level of subcommands the words name (`mesh`, then `mesh builds`).
            var depth = 1
            while depth < words.count,
                  group.contains(where: { $0.path.count > depth + 1 && Array($0.path.prefix(depth + 1)) == Array(words.prefix(depth + 1)) }) {
                depth += 1
            }
            var subcommands: [String] = []
            for command in group where Array(command.path.prefix(depth)) == Array(words.prefix(depth)) && !subcommands.contains(command.path[depth]) {
                subcommands.append(command.path[depth])
            }
            let named = words.prefix(depth).joined(separator: " ")
            if words.count > depth, let near = Suggest.closest(to: words[depth], among: subcommands) {
                throw JobError.usage("unknown command '\(named) \(words[depth])'; did you mean '\(named) \(near)'?")
            }
            throw JobError.usage("'\(named)' needs one of: \(subcommands.joined(separator: ", "))")
        }
        if words[0].hasPrefix("-") {
            var message = "unknown option \(words[0])"
            if let near = Suggest.closest(to: words[0], among: OptionSpec.globalNames) { message += "; did you mean \(near)?" }
            throw JobError.usage(message)
        }
        var message = "unknown command '\(words[0])'"
        let names = catalog.jobs.map(\.name) + catalog.commands.map { $0.path[0] } + CommandLineApp.builtins.map(\.name)
        if let near = Suggest.closest(to: words[0], among: Array(Set(names)).sorted()) { message += "; did you mean \(near)?" }
        throw JobError.usage(message)
    }
}
