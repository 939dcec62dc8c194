import Foundation
import Runner
import Store

/// `job migrate`: creates the store or applies the migrations it lacks, and says which.
struct MigrateCommand: BuiltinCommand {
    let name = "migrate"
    let summary = "create or upgrade the store (every command also does this itself)"

    func run(_ context: BuiltinContext) throws {
        let catalog = context.catalog, invocation = context.invocation
        let engine = invocation.storeEngine
        if engine == .sqlite {
            try PrivateFiles.createFolders(for: invocation.storePath)
            PrivateFiles.createStoreFile(invocation.storePath)
        } else {
            try LazyLibrary.postgresql.require()
        }
        let migrator = catalog.migrator(for: engine)
        let database: Database
        let applied: [String]
        do {
            database = try Database(path: invocation.storePath)
            applied = try migrator.migrate(database, now: Date().unixMilliseconds)
        } catch {
            throw StoreFailure.jobError(for: error)
        }
        let total = migrator.migrations.count
        if invocation.jsonOutput {
            // A PostgreSQL connection string may carry a password: it is never echoed.
            let store: JSON = engine == .postgresql ? .string("postgresql") : .string(database.path)
            invocation.output.write(JSON.object([("applied", .array(applied.map(JSON.string))), ("known", .number(total)), ("store", store)]).rendered() + "\n")
        } else {
            invocation.output.write(applied.isEmpty ? "store is up to date (\(total) migrations)\n" : "applied \(applied.count) migration(s): \(applied.joined(separator: ", "))\n")
        }
    }
}
