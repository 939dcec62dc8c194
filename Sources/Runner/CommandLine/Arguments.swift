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

    /// The whole-number value of an option, or nil when it was not given. A value that is not a whole number in
    /// `range` is a usage error (exit 64): "NAME needs REQUIREMENT", where the requirement is `needs` when given,
    /// else worded from the range ("a whole number above 0", "a whole number of at least N", "a whole number from N to M").
    package func integer(_ name: String, in range: ClosedRange<Int>, needs requirement: String? = nil) throws -> Int? {
        guard let text = values[name] else { return nil }
        return try Self.integer(text, name: name, in: range, needs: requirement)
    }

    /// The whole-number value of an option, or `defaultValue` when it was not given; errors as `integer(_:in:needs:)`.
    package func integer(_ name: String, in range: ClosedRange<Int>, default defaultValue: Int, needs requirement: String? = nil) throws -> Int {
        try integer(name, in: range, needs: requirement) ?? defaultValue
    }

    /// The whole-number value of an option that must be given: a usage error naming it when missing, else as `integer(_:in:needs:)`.
    package func requiredInteger(_ name: String, in range: ClosedRange<Int>, needs requirement: String? = nil) throws -> Int {
        try Self.integer(try required(name), name: name, in: range, needs: requirement)
    }

    private static func integer(_ text: String, name: String, in range: ClosedRange<Int>, needs requirement: String?) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw JobError.usage("\(name) needs \(requirement ?? Self.requirement(for: range))")
        }
        return value
    }

    private static func requirement(for range: ClosedRange<Int>) -> String {
        if range.upperBound == Int.max { return range.lowerBound == 1 ? "a whole number above 0" : "a whole number of at least \(range.lowerBound)" }
        return "a whole number from \(range.lowerBound) to \(range.upperBound)"
    }

    /// The positional at `index`, if given.
    package func positional(_ index: Int) -> String? { index < positionals.count ? positionals[index] : nil }
}
