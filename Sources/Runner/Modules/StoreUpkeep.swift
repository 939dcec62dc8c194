/// A module's own pruning, run by `maintain-store` on a SQLite store after the ledger is pruned and before the store
/// is optimized and vacuumed (so the pages it frees leave the file in the same pass). Its counts join the pass's.
package struct StoreUpkeep: Sendable {
    package let name: String
    package let run: @Sendable (JobContext) throws -> Counts

    package init(name: String, run: @escaping @Sendable (JobContext) throws -> Counts) {
        self.name = name
        self.run = run
    }
}
