import Runner

/// Help texts: `job help`, `job help COMMAND`, and `--help` on every command.
struct Help {
    let catalog: Catalog

    static let exitCodes = """
        Exit codes:
          0   done (also: skipped because another pass holds the lease, or the job is disabled)
          64  usage error             65  bad input data          69  a required service is unavailable
          70  internal error          73  store cannot be created or opened
          75  transient failure, retry next pass (also: stopped by SIGTERM/SIGINT)
          78  configuration error
        """

    func general() -> String {
        var text = """
            job — one-pass background jobs over a shared store (SQLite; PostgreSQL for the relay role).

            Usage: job [--store STORE] [--now TIME] [--json] [--log-format text|json] [--metrics-dir DIR] COMMAND [OPTIONS]

            Jobs (one pass each; add --dry-run to change nothing):

            """
        let names = catalog.jobs.map(\.name) + CommandLineApp.builtins.map(\.name) + catalog.commands.map(\.displayName)
        let width = names.map(\.count).max() ?? 16
        for job in catalog.jobs { text += "  " + job.name.padded(to: width + 2) + job.summary + "\n" }
        text += "\nCommands:\n"
        for builtin in CommandLineApp.builtins {
            text += "  " + builtin.name.padded(to: width + 2) + builtin.summary + "\n"
        }
        for command in catalog.commands {
            text += "  " + command.displayName.padded(to: width + 2) + command.summary + "\n"
        }
        text += "\nGlobal options:\n" + optionLines(GlobalOptions.specs) + "\n" + Help.exitCodes + "\n"
        return text
    }

    /// Help for the command named by `words` (general help when empty).
    func text(for words: [String]) throws -> String {
        guard let first = words.first else { return general() }
        if let job = catalog.job(named: first) {
            var text = "job \(job.name) — \(job.summary)\n\nUsage: job [GLOBAL OPTIONS] \(job.name) [--dry-run]"
            for option in job.options { text += " " + option.usage }
            text += "\n\nOptions:\n" + optionLines(job.options + [.flag("--dry-run", "report what the pass would do, change nothing")])
            if !job.environmentKeys.isEmpty {
                text += "\nEnvironment:\n" + job.environmentKeys.map { "  \($0.name)\n      \($0.help)" }.joined(separator: "\n") + "\n"
            }
            let settings = job.settingKeys.compactMap { key in catalog.settings.first { $0.key == key } }
            if !settings.isEmpty {
                text += "\nSettings (job settings set KEY VALUE):\n" + settings.map { "  \($0.key)\n      \($0.summary)" }.joined(separator: "\n") + "\n"
            }
            text += "\nDefault schedule: OnCalendar=\(job.schedule.onCalendar) (cron: \(job.schedule.cron))\n\n" + Help.exitCodes + "\n"
            return text
        }
        if let builtin = CommandLineApp.builtins.first(where: { $0.name == first }) {
            return "job \(builtin.name) — \(builtin.summary)\n\nUsage: job [GLOBAL OPTIONS] \(builtin.name)\(builtin.usage.isEmpty ? "" : " " + builtin.usage)\n"
        }
        let matches = catalog.commands.filter { Array(words.prefix($0.path.count)) == $0.path }
        if let command = matches.max(by: { $0.path.count < $1.path.count }) {
            var text = "job \(command.displayName) — \(command.summary)\n\nUsage: job [GLOBAL OPTIONS] \(command.displayName)"
            for option in command.options { text += " " + option.usage }
            for positional in command.positionals { text += positional.optional ? " [\(positional.name)]" : " \(positional.name)" }
            text += "\n"
            if !command.options.isEmpty { text += "\nOptions:\n" + optionLines(command.options) }
            if !command.positionals.isEmpty {
                text += "\nArguments:\n" + command.positionals.map { "  \($0.name)\n      \($0.help)" }.joined(separator: "\n") + "\n"
            }
            if !command.environmentKeys.isEmpty {
                text += "\nEnvironment:\n" + command.environmentKeys.map { "  \($0.name)\n      \($0.help)" }.joined(separator: "\n") + "\n"
            }
            if !command.discussion.isEmpty { text += "\n" + command.discussion + "\n" }
            return text
        }
        var group: [any Command] = []
        for command in catalog.commands where command.path[0] == first && !group.contains(where: { $0.displayName == command.displayName }) {
            group.append(command)
        }
        if !group.isEmpty {
            return "job \(first) — subcommands:\n" + group.map { "  \($0.displayName)  \($0.summary)" }.joined(separator: "\n") + "\n"
        }
        var message = "no help for unknown command '\(first)'"
        let names = catalog.jobs.map(\.name) + catalog.commands.map { $0.path[0] } + CommandLineApp.builtins.map(\.name)
        if let near = Suggest.closest(to: first, among: names) { message += "; did you mean \(near)?" }
        throw JobError.usage(message)
    }

    /// `job help --json`: every job, built-in and module command with its options, for scripts and completion.
    func catalogJSON() -> JSON {
        func options(_ specs: [OptionSpec]) -> JSON {
            .array(specs.map { ["name": .string($0.name), "value": .optional($0.valueName), "help": .string($0.help)] })
        }
        return [
            "jobs": .array(catalog.jobs.map { ["name": .string($0.name), "summary": .string($0.summary), "options": options($0.options)] }),
            "builtins": .array(CommandLineApp.builtins.map { ["name": .string($0.name), "summary": .string($0.summary)] }),
            "commands": .array(catalog.commands.map { command in
                ["name": .string(command.displayName), "summary": .string(command.summary), "options": options(command.options),
                 "positionals": .array(command.positionals.map { ["name": .string($0.name), "optional": .bool($0.optional)] })]
            }),
        ]
    }

    /// `job help COMMAND --json`: one job, built-in or module command with its usage, options and arguments.
    func commandJSON(for words: [String]) throws -> JSON {
        func options(_ specs: [OptionSpec]) -> JSON {
            .array(specs.map { ["name": .string($0.name), "value": .optional($0.valueName), "required": .bool($0.isRequired), "help": .string($0.help)] })
        }
        let usage = try text(for: words).split(separator: "\n").first { $0.hasPrefix("Usage: ") }.map { String($0.dropFirst(7)) }
        guard let first = words.first else { return catalogJSON() }
        if let job = catalog.job(named: first) {
            return .object([("name", .string(job.name)), ("kind", .string("job")), ("summary", .string(job.summary)), ("usage", .optional(usage)),
                            ("options", options(job.options + [.flag("--dry-run", "report what the pass would do, change nothing")])),
                            ("positionals", .array([]))])
        }
        if let builtin = CommandLineApp.builtins.first(where: { $0.name == first }) {
            return .object([("name", .string(builtin.name)), ("kind", .string("builtin")), ("summary", .string(builtin.summary)),
                            ("usage", .optional(usage)), ("options", .array([])), ("positionals", .array([]))])
        }
        guard let command = catalog.commands.filter({ Array(words.prefix($0.path.count)) == $0.path }).max(by: { $0.path.count < $1.path.count }) else {
            throw JobError.usage("help --json needs a whole command name, such as 'grants issue'")
        }
        return .object([("name", .string(command.displayName)), ("kind", .string("command")), ("summary", .string(command.summary)),
                        ("usage", .optional(usage)), ("options", options(command.options)),
                        ("positionals", .array(command.positionals.map { ["name": .string($0.name), "optional": .bool($0.optional), "help": .string($0.help)] }))])
    }

    private func optionLines(_ options: [OptionSpec]) -> String {
        options.map { "  \($0.name)\($0.valueName.map { " " + $0 } ?? "")\n      \($0.help)" }.joined(separator: "\n") + "\n"
    }
}
