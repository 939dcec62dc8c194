/// One option a command accepts after its name: a flag (`--dry-run`) or an option with a value (`--to ID`).
public struct OptionSpec: Sendable {
    public let name: String
    /// Placeholder for the value (`ENDPOINT`); nil for a flag.
    public let valueName: String?
    public let help: String

    /// A flag that takes no value.
    public static func flag(_ name: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: nil, help: help) }
    /// An option that takes one value.
    public static func value(_ name: String, _ valueName: String, _ help: String) -> OptionSpec { OptionSpec(name: name, valueName: valueName, help: help) }

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
