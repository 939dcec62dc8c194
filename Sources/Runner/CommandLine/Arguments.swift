/// The options and positionals given to one command, parsed against its `OptionSpec`s.
package struct Arguments: Sendable {
    public private(set) var flags: Set<String> = []
    public private(set) var values: [String: String] = [:]
    public private(set) var positionals: [String] = []

    package init() {}

    /// Parses `tokens` for a command named `commandName` that accepts `options` and at most the `positionals`.
    /// Unknown options, a missing value, a repeated option or extra positionals are usage errors (exit 64).
    package init(parsing tokens: [String], options: [OptionSpec], positionals specs: [PositionalSpec], commandName: String) throws {
        var index = 0
        var onlyPositionals = false
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if onlyPositionals || !token.hasPrefix("--") || token == "-" {
                positionals.append(token)
                continue
            }
            if token == "--" { onlyPositionals = true; continue }
            var name = token
            var inlineValue: String?
            if let eq = token.firstIndex(of: "=") {
                name = String(token[..<eq])
                inlineValue = String(token[token.index(after: eq)...])
            }
            guard let spec = options.first(where: { $0.name == name }) else {
                var message = "unknown option \(name) for '\(commandName)'"
                if let suggestion = Suggest.closest(to: name, among: options.map(\.name) + OptionSpec.globalNames) { message += "; did you mean \(suggestion)?" }
                throw JobError.usage(message)
            }
            if spec.takesValue {
                let value: String
                if let inlineValue { value = inlineValue }
                else if index < tokens.count { value = tokens[index]; index += 1 }
                else { throw JobError.usage("option \(name) of '\(commandName)' needs a value (\(spec.valueName!))") }
                guard values[name] == nil else { throw JobError.usage("option \(name) given twice") }
                values[name] = value
            } else {
                guard inlineValue == nil else { throw JobError.usage("option \(name) takes no value") }
                flags.insert(name)
            }
        }
        if let missing = options.first(where: { $0.isRequired && values[$0.name] == nil }) {
            throw JobError.usage("'\(commandName)' needs \(missing.name) \(missing.valueName ?? "")")
        }
        let required = specs.filter { !$0.optional }.count
        if positionals.count < required {
            let missing = specs[positionals.count].name
            throw JobError.usage("'\(commandName)' needs \(missing)")
        }
        if positionals.count > specs.count {
            throw JobError.usage("'\(commandName)' takes \(specs.isEmpty ? "no arguments" : "at most \(specs.count) argument(s)"), got \(positionals.count)")
        }
    }

    /// True when the flag was given.
    package func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of an option, if given.
    package func value(_ name: String) -> String? { values[name] }

    /// The value of a required option, or a usage error naming it.
    package func required(_ name: String) throws -> String {
        guard let value = values[name] else { throw JobError.usage("missing required option \(name)") }
        return value
    }

    /// The positional at `index`, if given.
    package func positional(_ index: Int) -> String? { index < positionals.count ? positionals[index] : nil }
}
