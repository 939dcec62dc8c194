/// `job settings list|get|set|unset`: the shared settings table, validated against each module's specs.
struct SettingsListCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["settings", "list"]
    let summary = "every setting with its value and default"
    func run(_ context: JobContext) throws {
        var rows: [JSON] = []
        var lines: [String] = []
        for spec in context.settings.specs {
            let value = try context.settings.string(spec.key)
            let isSet = try context.settings.isSet(spec.key)
            rows.append(["key": .string(spec.key), "value": .string(value), "default": .string(spec.defaultValue), "set": .bool(isSet), "summary": .string(spec.summary)])
            lines.append("\(spec.key) = \(value)\(isSet ? "" : " (default)")  — \(spec.summary)")
        }
        if context.jsonOutput { context.printJSON(.array(rows)) } else { lines.forEach(context.print) }
    }
}

struct SettingsGetCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["settings", "get"]
    let summary = "print one setting's value"
    let positionals = [PositionalSpec("KEY", "the setting")]
    func run(_ context: JobContext) throws {
        let key = context.arguments.positional(0)!
        let value = try context.settings.string(key)
        if context.jsonOutput { context.printJSON(["key": .string(key), "value": .string(value)]) } else { context.print(value) }
    }
}

struct SettingsSetCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["settings", "set"]
    let summary = "change a setting"
    let positionals = [PositionalSpec("KEY", "the setting"), PositionalSpec("VALUE", "its new value")]
    func run(_ context: JobContext) throws {
        let key = context.arguments.positional(0)!
        let value = context.arguments.positional(1)!
        try context.settings.set(key, value, now: context.nowMilliseconds)
        if context.jsonOutput { context.printJSON(["key": .string(key), "value": .string(value)]) } else { context.print("\(key) = \(value)") }
    }
}

struct SettingsUnsetCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["settings", "unset"]
    let summary = "return a setting to its default"
    let positionals = [PositionalSpec("KEY", "the setting")]
    func run(_ context: JobContext) throws {
        let key = context.arguments.positional(0)!
        try context.settings.unset(key)
        let value = try context.settings.string(key)
        if context.jsonOutput { context.printJSON(["key": .string(key), "value": .string(value)]) } else { context.print("\(key) = \(value) (default)") }
    }
}
