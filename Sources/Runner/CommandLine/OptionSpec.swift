/// One option a command accepts after its name: a flag (`--dry-run`) or an option with a value (`--to ID`).
package struct OptionSpec: Sendable {
    package let name: String
    /// Placeholder for the value (`ENDPOINT`); nil for a flag.
    package let valueName: String?
    package let help: String
    /// True when the command cannot run without it: help shows it without brackets and parsing insists on it.
    package var isRequired = false

    /// A flag that takes no value.
    package static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: nil, help: help) }
    /// An option that takes one value.
    package static func value(_ name: String, _ valueName: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: valueName, help: help) }
    /// An option with a value that must be given.
    package static func required(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, isRequired: true)
    }

    /// How usage lines show it: `--to ENDPOINT` when required, `[--lifetime 30d|…]` when not.
    package var usage: String {
        let text = name + (valueName.map { " " + $0 } ?? "")
        return isRequired ? text : "[\(text)]"
    }

    /// The options every command accepts, before or after its name (`job --help` lists them with their help).
    package static let globalNames = ["--store", "--now", "--json", "--log-format", "--metrics-dir", "--help", "--version"]

    package var takesValue: Bool { valueName != nil }
}

/// A positional argument a command accepts.
package struct PositionalSpec: Sendable {
    package let name: String
    package let help: String
    package let optional: Bool
    package init(_ name: String, _ help: String, optional: Bool = false) {
        self.name = name
        self.help = help
        self.optional = optional
    }
}
