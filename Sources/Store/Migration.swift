/// One named, append-only schema change. Each module contributes its own; names never change once shipped.
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
