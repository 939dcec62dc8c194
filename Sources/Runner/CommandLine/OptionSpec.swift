/// One option a command accepts after its name: a flag (`--dry-run`) or an option with a value (`--to ID`).
public struct OptionSpec: Sendable {
    public let name: String
    /// Placeholder for the value (`ENDPOINT`); nil for a flag.
    public let valueName: String?
    public let help: String
    /// True when the command cannot run without it: help shows it without brackets and parsing insists on it.
    public var isRequired = false

    /// A flag that takes no value.
    public static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: nil, help: help) }
    /// An option that takes one value.
    public static func value(_ name: String, _ valueName: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: valueName, help: help) }
    /// An option with a value that must be given.
    public static func required(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, isRequired: true)
    }

    /// How usage lines show it: `--to ENDPOINT` when required, `[--lifetime 30d|…]` when not.
    public var usage: String {
        let text = name + (valueName.map { " " + $0 } ?? "")
        return isRequired ? text : "[\(text)]"
    }

    /// The options every command accepts, before or after its name (`job --help` lists them with their help).
    public static let globalNames = ["--store", "--now", "--json", "--log-format", "--metrics-dir", "--help", "--version"]

    public var takesValue: Bool { valueName != nil }
}

/// A positional argument a command accepts.
public struct PositionalSpec: Sendable {
    public let name: String
    public let help: String
    public let optional: Bool
    public init(_ name: String, _ help: String, optional: Bool = false) {
        self.name = name
        self.help = help
        self.optional = optional
    }
}
