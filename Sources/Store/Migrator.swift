import CSQLite

/// Applies named migrations once each, in order, recording them in `schema_migrations(name, applied_at)`.
///
/// All pending migrations run in one `BEGIN IMMEDIATE` transaction, so two processes starting together
/// serialize: the second waits for the first's lock, then finds nothing left to do, and a migration that fails
/// leaves the store as it was, still readable by the version that wrote it. On PostgreSQL (whose DDL is
/// transactional too) an advisory lock taken first does the same across hosts. A store that records a
/// migration this binary does not know was written by a newer version; it is refused with `NewerSchemaError`
/// and left untouched.
///
/// On SQLite the migrations run as GRDB's `DatabaseMigrator` runs one, which is SQLite's own procedure for a
/// schema change (https://www.sqlite.org/lang_altertable.html §7): foreign keys off before the transaction,
/// `BEGIN IMMEDIATE`, each migration with its record and then `PRAGMA foreign_key_check`, `COMMIT`, and foreign
/// keys on again, also when a migration failed. With foreign keys off, dropping a table does not delete the rows
/// that reference it, so a migration that rebuilds a table (create the new one, copy the rows, drop the old one,
/// rename the new one) is just that, whatever references the table. A migration that leaves a row whose parent
/// is missing is refused, and nothing is migrated (docs/design.md §4).
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
    /// `now` is the time recorded in `applied_at`, in Unix milliseconds. `database` must have no transaction open.
    @discardableResult
    package func migrate(_ database: Database, now: Int64) throws -> [String] {
        // Fast path without the write lock: every process runs this at start-up.
        if let applied = try? appliedNames(database), try pending(given: applied).isEmpty {
            return []
        }
        guard database.engine == .sqlite, try database.scalar("PRAGMA foreign_keys") as Int64? == 1 else {
            // PostgreSQL checks every foreign key as each statement runs, and has no such switch; an SQLite
            // connection with foreign keys off has nothing to turn back on, nor keys to check.
            return try applyPending(database, now: now, checkingForeignKeys: false)
        }
        // "This pragma is a no-op within a transaction; foreign key constraint enforcement may only be enabled or
        // disabled when there is no pending BEGIN or SAVEPOINT." — PRAGMA foreign_keys. Hence outside the
        // transaction, both ways, and read back: a rebuild run with foreign keys still on would delete the rows
        // that reference the rebuilt table.
        try database.execute("PRAGMA foreign_keys = OFF")
        let applied: [String]
        do {
            guard try database.scalar("PRAGMA foreign_keys") as Int64? == 0 else {
                throw StoreError.misuse("migrations need a connection with no transaction open", sql: "PRAGMA foreign_keys = OFF")
            }
            applied = try applyPending(database, now: now, checkingForeignKeys: true)
        } catch {
            try? database.execute("PRAGMA foreign_keys = ON")
            throw error
        }
        try database.execute("PRAGMA foreign_keys = ON")
        return applied
    }

    private func applyPending(_ database: Database, now: Int64, checkingForeignKeys: Bool) throws -> [String] {
        try database.write { db in
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
            // Rows left without their parent before this call (by another program, with foreign keys off) are not a
            // migration's doing: they neither stop it nor count against it, as they did not before the check.
            let before = checkingForeignKeys && !todo.isEmpty ? try ForeignKeyViolations(db) : ForeignKeyViolations()
            for migration in todo {
                try migration.apply(db)
                try db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", [migration.name, now])
                if checkingForeignKeys, let violation = try ForeignKeyViolations(db).firstNotIn(before) {
                    throw StoreError(
                        // SQLITE_CONSTRAINT_FOREIGNKEY, `SQLITE_CONSTRAINT | (3 << 8)`: a macro Swift does not import.
                        extendedCode: SQLITE_CONSTRAINT | (3 << 8),
                        message: "migration \(migration.name) leaves a row in \(violation.table) whose parent row in \(violation.parent) is missing; nothing was migrated",
                        sql: "PRAGMA foreign_key_check")
                }
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

/// What `PRAGMA foreign_key_check` reports: "one row for each foreign key violation", giving the table holding the
/// row, its rowid (NULL in a WITHOUT ROWID table), the parent table and which of the table's foreign keys fails.
/// Counted per (table, rowid, parent, key), so that rows without a rowid are told apart by their number.
private struct ForeignKeyViolations {
    struct Key: Hashable {
        let table: String
        let rowid: Int64?
        let parent: String
        let foreignKey: Int64
    }

    private var counts: [Key: Int] = [:]
    private var order: [Key] = []

    init() {}

    init(_ db: Database) throws {
        for row in try db.query("PRAGMA foreign_key_check") {
            let key = Key(table: try row.get(0), rowid: try? row.get(1), parent: try row.get(2), foreignKey: try row.get(3))
            if counts[key] == nil { order.append(key) }
            counts[key, default: 0] += 1
        }
    }

    /// The first violation found here more often than in `earlier`.
    func firstNotIn(_ earlier: ForeignKeyViolations) -> Key? {
        order.first { counts[$0, default: 0] > earlier.counts[$0, default: 0] }
    }
}
