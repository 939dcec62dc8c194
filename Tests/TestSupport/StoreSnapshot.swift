import Runner

/// What an SQLite store holds, for telling whether two stores are the same: its schema as `sqlite_schema` records
/// it (type, name, table and SQL text, in name order — not the root pages, which depend on the order the pages
/// were allocated in) and every table's rows (sorted, as SQL promises no order).
package struct StoreSnapshot: Equatable, CustomStringConvertible {
    package let schema: [String]
    package let rows: [String: [String]]

    package init(_ db: Database) throws {
        schema = try db.query("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name").map { row in
            row.values.map { "\($0)" }.joined(separator: " | ")
        }
        var rows: [String: [String]] = [:]
        let tables: [String] = try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").map { try $0.get(0) }
        for table in tables {
            rows[table] = try db.query("SELECT * FROM \"\(table)\"").map { row in
                zip(row.columnNames, row.values).map { "\($0)=\($1)" }.joined(separator: ", ")
            }.sorted()
        }
        self.rows = rows
    }

    package var description: String {
        (schema + rows.keys.sorted().flatMap { table in rows[table]!.map { "\(table): \($0)" } }).joined(separator: "\n")
    }
}
