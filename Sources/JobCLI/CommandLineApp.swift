import Foundation
import Runner
import Store

/// The `job` executable: parses global options, dispatches to a job, a module command or a built-in, and
/// turns every failure into a one-line message and its documented exit code.
package struct CommandLineApp {
    package let catalog: Catalog

    package init(catalog: Catalog) { self.catalog = catalog }

    /// The built-in commands: name, one-line summary, and what follows the name in a usage line.
    static let builtins: [(name: String, summary: String, usage: String)] = [
        ("list", "every job with a one-line description", ""),
        ("status", "last run of each job: outcome, finished at, duration, counts", ""),
        ("migrate", "create or upgrade the store (every command also does this itself)", ""),
        ("help", "show help for job or for a command", "[COMMAND]"),
        ("deployment", "write the systemd units, env example and crontab for the job table (--write DIR)", "[--write DIR]"),
        ("version", "the version, commit and library versions (also --version)", ""),
        ("completions", "print a shell completion script generated from the command table", "bash|zsh|fish"),
        ("manpage", "print the man page (roff; view with man -l)", ""),
        ("reference", "print the command reference (Markdown, docs/reference/commands.md)", ""),
    ]

    /// Runs `job` with `arguments` (without the program name) and returns the exit code.
    package func run(arguments: [String], environment: [String: String], output: TextOutput = StandardOutput(),
                    errorOutput: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) -> ExitCode {
        do {
            let globals = try GlobalOptions(parsing: arguments)
            let words = globals.rest
            let help = Help(catalog: catalog)
            if globals.version && !globals.help {
                output.write(Builtins.versionText(globals.json))
                return .success
            }
            guard let first = words.first else {
                if globals.help { output.write(help.general()); return .success }
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
                return .success
            }
            if globals.help {
                output.write(try help.text(for: words.filter { !$0.hasPrefix("-") }))
                return .success
            }
            let invocation = try globals.invocation(environment: environment, output: output, errorOutput: errorOutput)
            let tokens = Array(words.dropFirst())
            switch first {
            case "list":
                _ = try Arguments(parsing: tokens, options: [], positionals: [], commandName: "list")
                Builtins.list(catalog: catalog, invocation: invocation)
                return .success
            case "status":
                _ = try Arguments(parsing: tokens, options: [], positionals: [], commandName: "status")
                try Builtins.status(catalog: catalog, invocation: invocation)
                return .success
            case "completions":
                let arguments = try Arguments(parsing: tokens, options: [], positionals: [PositionalSpec("SHELL", "bash, zsh or fish")], commandName: "completions")
                let completions = Completions(catalog: catalog)
                switch arguments.positional(0)! {
                case "bash": output.write(completions.bash())
                case "zsh": output.write(completions.zsh())
                case "fish": output.write(completions.fish())
                default: throw JobError.usage("completions are for bash, zsh or fish")
                }
                return .success
            case "manpage":
                _ = try Arguments(parsing: tokens, options: [], positionals: [], commandName: "manpage")
                output.write(Completions(catalog: catalog).manpage())
                return .success
            case "reference":
                _ = try Arguments(parsing: tokens, options: [], positionals: [], commandName: "reference")
                output.write(CommandReference(catalog: catalog).markdown())
                return .success
            case "version":
                _ = try Arguments(parsing: tokens, options: [], positionals: [], commandName: "version")
                output.write(Builtins.versionText(invocation.jsonOutput))
                return .success
            case "migrate":
                _ = try Arguments(parsing: tokens, options: [], positionals: [], commandName: "migrate")
                try Builtins.migrate(catalog: catalog, invocation: invocation)
                return .success
            case "deployment":
                let arguments = try Arguments(parsing: tokens, options: [.value("--write", "DIR", "")], positionals: [], commandName: "deployment")
                let deployment = Deployment(catalog: catalog)
                if let directory = arguments.value("--write") {
                    do { try deployment.write(to: directory) } catch {
                        throw JobError.configuration("deployment-write", "cannot write the deployment files; check the folder exists and is writable")
                    }
                    if invocation.jsonOutput {
                        output.write(JSON.object([("written", .array(deployment.files().map { .string($0.path) }))]).rendered() + "\n")
                    } else {
                        output.write("wrote \(deployment.files().count) files\n")
                    }
                } else if invocation.jsonOutput {
                    let files: [JSON] = deployment.files().map { ["path": .string($0.path), "content": .string($0.content)] }
                    output.write(JSON.object([("files", .array(files))]).rendered() + "\n")
                } else {
                    for file in deployment.files() { output.write("==> \(file.path) <==\n\(file.content)\n") }
                }
                return .success
            default:
                break
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
        } catch {
            let failure = StoreFailure.jobError(for: error)
            let hint = failure.exitCode == .usage
                ? "Usage: job [--store STORE] [--now TIME] [--json] [--log-format text|json] [--metrics-dir DIR] COMMAND [OPTIONS]\nRun 'job help' for the commands." : nil
            errorOutput(Logger.failureLine(command: nil, failure, format: CommandLineApp.logFormat(arguments, environment),
                                           priorityPrefix: Logger.stderrIsJournal(environment: environment), usageHint: hint))
            if CommandLineApp.wantsJSON(arguments) && !failure.printedAsJSON { output.write(CommandLineApp.failureJSON(failure).rendered() + "\n") }
            return failure.exitCode
        }
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
