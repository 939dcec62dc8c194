import Store

/// Reads and writes the `settings` table, falling back to each registered setting's default.
package struct Settings {
    let database: Database
    let specs: [SettingSpec]

    package init(database: Database, specs: [SettingSpec]) {
        self.database = database
        self.specs = specs
    }

    /// The spec for `key`, or a usage error naming the closest known key.
    package func spec(_ key: String) throws -> SettingSpec {
        if let spec = specs.first(where: { $0.key == key }) { return spec }
        var message = "unknown setting \(key)"
        if let near = Suggest.closest(to: key, among: specs.map(\.key)) { message += "; did you mean \(near)?" }
        throw JobError.usage(message)
    }

    /// The stored value, or the default; checked against the spec where it is read, since a store can be
    /// edited by hand or by an older version: a stored value out of range is a configuration error (78).
    package func string(_ key: String) throws -> String {
        let spec = try spec(key)
        let stored: String? = try database.scalar("SELECT value FROM settings WHERE key = ?", [key])
        guard let stored else { return spec.defaultValue }
        if let problem = spec.validate(stored) {
            throw JobError.configuration("setting", "the stored setting \(key) \(problem); run 'job settings set \(key) VALUE' or 'job settings unset \(key)'")
        }
        return stored
    }

    /// The value as an integer (range-checked by `string`).
    package func int(_ key: String) throws -> Int {
        let text = try string(key)
        guard let value = Int(text) else { throw JobError.configuration("setting", "the stored setting \(key) is not a number; run 'job settings unset \(key)'") }
        return value
    }

    /// The value of an on/off toggle.
    package func isOn(_ key: String) throws -> Bool { try string(key) == "on" }

    /// True when the user stored a value (not the default).
    package func isSet(_ key: String) throws -> Bool {
        _ = try spec(key)
        let count: Int? = try database.scalar("SELECT count(*) FROM settings WHERE key = ?", [key])
        return (count ?? 0) > 0
    }

    /// Validates and stores `value` (in its own write transaction unless one is open).
    package func set(_ key: String, _ value: String, now: Int64) throws {
        let spec = try spec(key)
        if let problem = spec.validate(value) { throw JobError.usage("setting \(key) \(problem)") }
        try database.writeIfNeeded { db in
            try db.execute("""
                INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, [key, value, now])
        }
    }

    /// Returns the setting to its default.
    package func unset(_ key: String) throws {
        _ = try spec(key)
        try database.writeIfNeeded { db in _ = try db.execute("DELETE FROM settings WHERE key = ?", [key]) }
    }
}
