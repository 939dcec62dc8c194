/// Where a module keeps values sealed under the store key, so a key can be checked against them
/// (`StoreKeyCheck`): a table, its sealed column and the purpose the values were sealed for.
///
/// Used when the store's key-check row is missing (deleted by hand, or lost in a partial restore): a key that
/// cannot open one of these values is not this store's key, and is refused instead of sealing a new check row.
package struct SealedSample: Sendable {
    /// A table name (a constant of the module's own schema, never input).
    package let table: String
    /// The column holding sealed bytes.
    package let column: String
    /// The purpose the module seals them for (`StoreKeyring.seal(_:purpose:)`).
    package let purpose: String

    package init(table: String, column: String, purpose: String) {
        self.table = table
        self.column = column
        self.purpose = purpose
    }
}
