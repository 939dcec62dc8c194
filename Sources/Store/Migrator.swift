/// Applies named migrations once each, in order, recording them in `schema_migrations(name, applied_at)`.
///
/// All pending migrations run in one `BEGIN IMMEDIATE` transaction, so two processes starting together
/// serialize: the second waits for the first's lock, then finds nothing left to do. On PostgreSQL (whose DDL is
/// transactional too) an advisory lock taken first does the same across hosts. A store that records a
/// migration this binary does not know was written by a newer version; it is refused with `NewerSchemaError`
/// and left untouched.
package struct Migrator: Sendable {
    public private(set) var migrations: [Migration] = []

    package init(_ migrations: [Migration] = []) {
        for migration in migrations { register(migration) }
    }

    /// Adds a migration after those already registered.
    package mutating func register(_ migration: Migration) {
        precondition(!migrations.contains { $0.name == migration.name }, "duplicate migration name \(migration.name)")
        migrations.append(migration)
    }

    /// Brings `database` up to date; returns the names applied by this call (empty when it already was).
    ///
    /// `now` is the time recorded in `applied_at`, in Unix milliseconds.
    @discardableResult
    package func migrate(_ database: Database, now: Int64) throws -> [String] {
        // Fast path without the write lock: every process runs this at start-up.
        if let applied = try? appliedNames(database), try pending(given: applied).isEmpty {
            return []
        }
        return try database.write { db in
            try db.lockForWrite("schema_migrations")
            try db.execute(db.engine == .postgresql ? """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    name TEXT PRIMARY KEY NOT NULL,
                    applied_at BIGINT NOT NULL
                )
                """ : """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    name TEXT PRIMARY KEY NOT NULL,
                    applied_at INTEGER NOT NULL
                ) STRICT
                """)
            let todo = try pending(given: try appliedNames(db))
            for migration in todo {
                try migration.apply(db)
                try db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", [migration.name, now])
            }
            return todo.map(\.name)
        }
    }

    private func appliedNames(_ database: Database) throws -> Set<String> {
        let exists: Int64? = try database.scalar(database.engine == .postgresql
            ? "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
            : "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'")
        guard exists == 1 else { return [] }
        return Set(try database.query("SELECT name FROM schema_migrations").map { try $0.get(0, as: String.self) })
    }

    private func pending(given applied: Set<String>) throws -> [Migration] {
        let known = Set(migrations.map(\.name))
        let unknown = applied.subtracting(known)
        guard unknown.isEmpty else { throw NewerSchemaError(unknownMigrationCount: unknown.count) }
        return migrations.filter { !applied.contains($0.name) }
    }
}
