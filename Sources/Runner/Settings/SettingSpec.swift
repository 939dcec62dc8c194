/// A named setting a module reads from the store's `settings` table, with its default and validation.
package struct SettingSpec: Sendable {
    package let key: String
    package let defaultValue: String
    package let summary: String
    /// Returns nil when `value` is acceptable, else why not.
    package let validate: @Sendable (String) -> String?

    package init(key: String, defaultValue: String, summary: String, validate: @escaping @Sendable (String) -> String?) {
        self.key = key
        self.defaultValue = defaultValue
        self.summary = summary
        self.validate = validate
    }

    /// `on` or `off`.
    package static func toggle(_ key: String, default on: Bool, _ summary: String) -> SettingSpec {
        SettingSpec(key: key, defaultValue: on ? "on" : "off", summary: summary) {
            ["on", "off"].contains($0) ? nil : "must be on or off"
        }
    }

    /// A whole number in `range`.
    package static func integer(_ key: String, default value: Int, in range: ClosedRange<Int>, _ summary: String) -> SettingSpec {
        SettingSpec(key: key, defaultValue: String(value), summary: summary) {
            guard let n = Int($0), range.contains(n) else { return "must be a whole number from \(range.lowerBound) to \(range.upperBound)" }
            return nil
        }
    }

    /// One of `choices`.
    package static func choice(_ key: String, default value: String, _ choices: [String], _ summary: String) -> SettingSpec {
        SettingSpec(key: key, defaultValue: value, summary: summary) {
            choices.contains($0) ? nil : "must be one of \(choices.joined(separator: ", "))"
        }
    }
}
