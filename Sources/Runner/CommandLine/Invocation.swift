import Elapsed
import Foundation
import Store

/// The global options of one `job` invocation, resolved: where the store is, which clock, which output.
package struct Invocation: Sendable {
    package var storePath: String
    package var clock: Clock
    /// The clock deadlines, durations and intervals read (tests: a `ManualClock`).
    package var monotonic: MonotonicClock
    package var jsonOutput: Bool
    package var logFormat: Logger.Format
    package var logLevel: Logger.Level
    package var metricsDirectory: String?
    package var environment: [String: String]
    package var output: TextOutput
    /// Where log lines go (stderr when nil).
    package var logSink: (@Sendable (String) -> Void)?
    /// Where one-line error messages for a person go (stderr).
    package var errorOutput: @Sendable (String) -> Void
    package var readInput: @Sendable () throws -> [UInt8]

    package init(storePath: String, clock: Clock = .system, monotonic: MonotonicClock = .system, jsonOutput: Bool = false, logFormat: Logger.Format = .text,
                logLevel: Logger.Level = .info, metricsDirectory: String? = nil, environment: [String: String] = [:],
                output: TextOutput = StandardOutput(), logSink: (@Sendable (String) -> Void)? = nil,
                errorOutput: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) },
                readInput: @escaping @Sendable () throws -> [UInt8] = { try StandardInput.read() }) {
        self.storePath = storePath
        self.clock = clock
        self.monotonic = monotonic
        self.jsonOutput = jsonOutput
        self.logFormat = logFormat
        self.logLevel = logLevel
        self.metricsDirectory = metricsDirectory
        self.environment = environment
        self.output = output
        self.logSink = logSink
        self.errorOutput = errorOutput
        self.readInput = readInput
    }

    /// The default store path (docs/design.md §3): `$STATE_DIRECTORY/store.sqlite` under systemd, else
    /// `${XDG_STATE_HOME:-$HOME/.local/state}/background-jobs/store.sqlite`.
    /// An empty or relative `HOME` is refused (78, naming the variables to set): it would put the store in the
    /// filesystem root or wherever the command happens to run. A relative `XDG_STATE_HOME` is ignored, as the
    /// XDG Base Directory specification says.
    package static func defaultStorePath(environment: [String: String]) throws -> String {
        if let state = environment["STATE_DIRECTORY"], !state.isEmpty {
            // systemd may pass several colon-separated directories; the first is ours.
            let first = state.split(separator: ":").first.map(String.init) ?? state
            return first + "/store.sqlite"
        }
        let base: String
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { base = xdg }
        else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            guard home.hasPrefix("/") else {
                throw JobError.configuration("home-unset", "HOME is \(home.isEmpty ? "empty" : "not an absolute path"), so the store has no place; set HOME (or XDG_STATE_HOME) to an absolute folder, or give --store / JOB_STORE")
            }
            base = (home.count > 1 && home.hasSuffix("/") ? String(home.dropLast()) : home) + "/.local/state"
        }
        return base + "/background-jobs/store.sqlite"
    }

    /// The engine the store location names (`--store postgresql://…` for PostgreSQL).
    package var storeEngine: Database.Engine { Database.engine(forLocation: storePath) }

    /// Refuses to run `what` (a job or command of the grants, pool, mesh or homeserver-helper role) on a
    /// PostgreSQL store, which holds the relay role only (exit 64).
    package func requireSQLiteStore(for what: String, runsOnPostgreSQL: Bool) throws {
        guard storeEngine == .postgresql, !runsOnPostgreSQL else { return }
        throw JobError.usage("'\(what)' runs on an SQLite store only: a PostgreSQL store holds the relay role (serve-relay, send-wakeups, clean-tokens, relay …); give this command an SQLite --store")
    }

    /// A logger for `name` with this invocation's format and destination.
    package func logger(for name: String) -> Logger {
        Logger(job: name, format: logFormat, minimumLevel: logLevel, priorityPrefix: Logger.stderrIsJournal(environment: environment), sink: logSink)
    }

    /// Opens the store (creating its folder and file) and applies pending migrations.
    /// Every failure is a `JobError` with exit 73 and a message that says what to do; the file is never rewritten.
    /// A PostgreSQL store is only connected to: its database is made by the operator, never by this program.
    package func openStore(_ catalog: Catalog) throws -> Database {
        if storeEngine == .postgresql {
            try LazyLibrary.postgresql.require()
        } else {
            try refuseSpecialStoreFile()
            try refuseRecreatingAServiceStore()
            try PrivateFiles.createFolders(for: storePath)
            try refuseEmptyStoreFile()
            PrivateFiles.createStoreFile(storePath)
        }
        do {
            let database = try Database(path: storePath)
            try catalog.migrator(for: storeEngine).migrate(database, now: Date().unixMilliseconds)
            return database
        } catch {
            throw StoreFailure.jobError(for: error)
        }
    }

    /// Opens the store for `job doctor`: as every command does, or, when it cannot be opened for writing (a
    /// read-only file, folder or mount), read-only without migrating, so that the report says what is wrong
    /// instead of stopping at the first error. Any other failure is thrown as `openStore` throws it.
    package func openStoreForReport(_ catalog: Catalog) throws -> Database {
        do {
            return try openStore(catalog)
        } catch {
            let failure = StoreFailure.jobError(for: error)
            guard storeEngine == .sqlite, failure.category == "store-read-only" || failure.category == "store-cannot-open",
                  PrivateFiles.kind(storePath) == .regular else { throw failure }
            var options = Database.Options()
            options.readOnly = true
            options.create = false
            options.immutable = true
            guard let database = try? Database(path: storePath, options: options) else { throw failure }
            return database
        }
    }

    /// Refuses to create the store in systemd's `StateDirectory` when the folder already holds its key
    /// (`store.sqlite.key`) but not the store: the store was there, and was deleted or moved while a server or
    /// the unit's jobs used it. A new empty store in its place would silently drop what they acknowledged.
    /// `job migrate` still creates it on purpose.
    func refuseRecreatingAServiceStore() throws {
        guard let state = environment["STATE_DIRECTORY"], !state.isEmpty,
              let folder = PrivateFiles.parentFolder(of: storePath),
              state.split(separator: ":").map(String.init).contains(folder),
              PrivateFiles.kind(storePath) == nil, PrivateFiles.kind(storePath + ".key") != nil else { return }
        throw JobError.store("store-missing", "the store file is missing from the service's state folder, which still holds its key: it was deleted or moved; restore it from a backup, or run 'job migrate' to start a new store deliberately")
    }

    /// Refuses a store path naming a folder, a FIFO or a device (`/dev/null`): SQLite cannot keep a store there, and
    /// calling it "empty" or "not a database" would send the operator looking in the wrong place.
    func refuseSpecialStoreFile() throws {
        switch PrivateFiles.kind(storePath) {
        case .directory?:
            throw JobError.store("store-not-a-file", "the store path is a folder, not a file; give --store (or JOB_STORE) the store file's path inside it")
        case .other?:
            throw JobError.store("store-not-a-file", "the store path is a special file (a FIFO, socket or device such as /dev/null), not a store; choose a regular file for --store")
        case .regular?, nil:
            return
        }
    }

    /// Refuses a store file that exists with 0 bytes (a truncated copy, a failed restore): opening it would quietly
    /// start a new, empty store in its place. `job migrate` creates the store in it on purpose. A file another
    /// process has just created gets its header within milliseconds, so a 0-byte file is looked at for up to 250 ms.
    func refuseEmptyStoreFile() throws {
        for attempt in 0..<50 {
            // lstat, not FileManager's attributes: those also look up the owner's and group's names, which costs
            // every command reading /etc/nsswitch.conf, /etc/passwd and /etc/group and asking nscd.
            var info = stat()
            guard lstat(storePath, &info) == 0, info.st_size == 0 else { return }
            if attempt < 49 { usleep(5_000) }
        }
        throw JobError.store("store-empty", "the store file is empty (0 bytes); restore it from a backup, or run 'job migrate' to start a new store in it")
    }

    /// A context for `name` over an open store.
    package func context(name: String, database: Database, arguments: Arguments, dryRun: Bool, catalog: Catalog) -> JobContext {
        JobContext(name: name, database: database, clock: clock, monotonic: monotonic, logger: logger(for: name), environment: environment,
                   arguments: arguments, dryRun: dryRun, jsonOutput: jsonOutput, storePath: storePath, output: output,
                   readInput: readInput, settings: catalog.settings,
                   storeKeyLocation: StoreKeyLocation.resolve(environment: environment, storePath: storePath), sealedSamples: catalog.sealedSamples)
    }
}
