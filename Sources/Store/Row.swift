/// One result row, materialised: column names and values, readable by index or by name.
package struct Row: Sendable {
    package let columnNames: [String]
    package let values: [DatabaseValue]

    package init(columnNames: [String], values: [DatabaseValue]) {
        self.columnNames = columnNames
        self.values = values
    }

    /// The raw value at `index`.
    package subscript(index: Int) -> DatabaseValue { values[index] }

    /// The raw value of the column named `name` (`.null` when there is no such column).
    package subscript(name: String) -> DatabaseValue {
        guard let index = columnNames.firstIndex(of: name) else { return .null }
        return values[index]
    }

    /// Decodes the column at `index`; throws when its storage class does not fit `T`.
    package func get<T: DatabaseValueConvertible>(_ index: Int, as type: T.Type = T.self) throws -> T {
        guard let value = T(databaseValue: values[index]) else {
            throw StoreError.misuse("column \(index) (\(columnNames[index])) does not hold a \(T.self)")
        }
        return value
    }

    /// Decodes the column named `name`; throws when it is missing or its storage class does not fit `T`.
    package func get<T: DatabaseValueConvertible>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard let index = columnNames.firstIndex(of: name) else {
            throw StoreError.misuse("no column named \(name) in the result")
        }
        return try get(index, as: type)
    }
}
