/// One named, append-only schema change. Each module contributes its own; names never change once shipped.
///
/// On SQLite it runs with foreign keys off inside the run's transaction (`Migrator`, docs/design.md §4): a table is
/// rebuilt with SQLite's steps (new table, copy, drop, rename) and the tables that reference it keep their rows
/// untouched; it must leave no row without its parent, or it is refused.
package struct Migration: Sendable {
    /// A stable, unique name, conventionally `<module>-<nnn>-<what>` (e.g. `runner-001-ledger`).
    package let name: String
    let apply: @Sendable (Database) throws -> Void

    /// A migration that runs an SQL script.
    package init(_ name: String, sql: String) {
        self.name = name
        self.apply = { try $0.execute(sql) }
    }

    /// A migration that runs code (for data moves that SQL alone cannot express).
    package init(_ name: String, apply: @escaping @Sendable (Database) throws -> Void) {
        self.name = name
        self.apply = apply
    }
}
