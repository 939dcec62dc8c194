import CShims
import Cryptography
import Elapsed
import Foundation
import Store

/// Everything a job pass or a command receives: the store, the injected clocks, the logger, configuration,
/// its parsed arguments, output, and cancellation. Domain code takes what it needs from here and nothing
/// from globals.
package final class JobContext {
    /// The job or command name (`sweep-grants`, `grants issue`).
    package let name: String
    /// The open, migrated store.
    package let database: Database
    /// The clock domain decisions read (`--now`).
    package let clock: Clock
    /// The clock deadlines, durations and intervals read: monotonic, never the wall clock (docs/design.md, "Clocks").
    package let monotonic: MonotonicClock
    package let logger: Logger
    /// Process environment (configuration such as `RELAY_URL`).
    package let environment: [String: String]
    /// Options and positionals after the command name.
    package let arguments: Arguments
    /// `--dry-run`: report what would be done, change nothing.
    package let dryRun: Bool
    /// `--json`: stdout carries exactly one JSON value.
    package let jsonOutput: Bool
    /// Path of the store file.
    package let storePath: String
    package let output: TextOutput
    /// Reads all of standard input (grant bundles, keys).
    package let readInput: @Sendable () throws -> [UInt8]
    /// Registered settings.
    package let settings: Settings
    private let storeKeyLocation: StoreKeyLocation
    /// The modules' sealed values a key is checked against when the key-check row is missing.
    private let sealedSamples: [SealedSample]
    private var cachedStoreKey: SecretBytes?
    private var cachedKeyring: StoreKeyring?
    var heartbeat: (() throws -> Void)?
    /// The emitted progress (rows done, total), for an operator watching a TTY.
    var progressReporter: ProgressReporter?

    package init(name: String, database: Database, clock: Clock, monotonic: MonotonicClock = .system, logger: Logger, environment: [String: String],
                arguments: Arguments, dryRun: Bool, jsonOutput: Bool, storePath: String, output: TextOutput,
                readInput: @escaping @Sendable () throws -> [UInt8], settings: [SettingSpec], storeKeyLocation: StoreKeyLocation,
                sealedSamples: [SealedSample] = []) {
        self.name = name
        self.sealedSamples = sealedSamples
        self.database = database
        self.clock = clock
        self.monotonic = monotonic
        self.logger = logger
        self.lastYield = monotonic.now()
        self.environment = environment
        self.arguments = arguments
        self.dryRun = dryRun
        self.jsonOutput = jsonOutput
        self.storePath = storePath
        self.output = output
        self.readInput = readInput
        self.settings = Settings(database: database, specs: settings)
        self.storeKeyLocation = storeKeyLocation
    }

    /// What another thread needs to open this context over a store connection of its own (a `Database` is used
    /// from one thread at a time): taken on the thread that owns this context (a context and its `Database` never
    /// cross threads), opened on the other. The opened copy shares the clock, logger, environment, arguments,
    /// output and the store key already loaded: call `keyring()` first.
    package func reopening() -> Reopening {
        Reopening(name: name, clock: clock, monotonic: monotonic, logger: logger, environment: environment, arguments: arguments, dryRun: dryRun,
                  jsonOutput: jsonOutput, storePath: storePath, output: output, readInput: readInput, settings: settings.specs,
                  storeKeyLocation: storeKeyLocation, storeKey: cachedStoreKey, keyring: cachedKeyring, sealedSamples: sealedSamples)
    }

    /// A context to be opened on another thread: everything but the store connection, which `open()` makes.
    package struct Reopening: Sendable {
        let name: String
        let clock: Clock
        let monotonic: MonotonicClock
        package let logger: Logger
        let environment: [String: String]
        let arguments: Arguments
        let dryRun: Bool
        let jsonOutput: Bool
        let storePath: String
        let output: TextOutput
        let readInput: @Sendable () throws -> [UInt8]
        let settings: [SettingSpec]
        let storeKeyLocation: StoreKeyLocation
        let storeKey: SecretBytes?
        let keyring: StoreKeyring?
        let sealedSamples: [SealedSample]

        /// The context over a new connection to the store, for the calling thread.
        package func open() throws -> JobContext {
            let database: Database
            do { database = try Database(path: storePath) } catch { throw StoreFailure.jobError(for: error) }
            let context = JobContext(name: name, database: database, clock: clock, monotonic: monotonic, logger: logger, environment: environment,
                                     arguments: arguments, dryRun: dryRun, jsonOutput: jsonOutput, storePath: storePath, output: output,
                                     readInput: readInput, settings: settings, storeKeyLocation: storeKeyLocation, sealedSamples: sealedSamples)
            context.cachedStoreKey = storeKey
            context.cachedKeyring = keyring
            return context
        }
    }

    /// The injected "now".
    package var now: Date { clock.now() }
    /// The injected "now" in Unix milliseconds.
    package var nowMilliseconds: Int64 { clock.now().unixMilliseconds }

    /// The store key (docs/design.md §4), loaded once; created on first use only at the default `<store>.key` location.
    /// A key that is not the one this store's secrets were sealed under is a configuration error (exit 78).
    package func storeKey() throws -> SecretBytes {
        if let cachedStoreKey { return cachedStoreKey }
        let sealed: Int = try database.scalar("SELECT count(*) FROM store_key_check") ?? 0
        let samples = sealed > 0 ? [] : StoreKeyCheck.samples(sealedSamples, in: database)
        let key = try storeKeyLocation.load(storeHoldsSecrets: sealed > 0 || !samples.isEmpty)
        try StoreKeyCheck.verify(key: key, database: database, now: Date().unixMilliseconds, samples: samples)
        cachedStoreKey = key
        return key
    }

    /// The keyring over the store key: sealing, opening and blind indexes for secrets at rest.
    package func keyring() throws -> StoreKeyring {
        if let cachedKeyring { return cachedKeyring }
        let keyring = try StoreKeyring(storeKey: storeKey())
        cachedKeyring = keyring
        return keyring
    }

    /// What the pass has committed so far. A job that updates this as batches commit has them recorded
    /// in the ledger even when it fails or is stopped part-way.
    package var committed = Counts()
    private var lastYield: MonotonicInstant

    /// Call between batches: throws `JobError.cancelled` once SIGTERM or SIGINT arrived, renews the lease when
    /// due, and every 100 ms pauses 5 ms outside any transaction so other writers (the app, other jobs) get the
    /// write lock instead of waiting for the whole pass. Safe inside a transaction too (then it never pauses).
    package func checkCancellation() throws {
        if shim_termination_signal() != 0 { throw JobError.cancelled }
        try heartbeat?()
        if !database.isInTransaction, monotonic.seconds(since: lastYield) >= 0.1 {
            usleep(5_000)
            lastYield = monotonic.now()
        }
    }

    /// Reports progress for a long pass (shown on a TTY only, never in `--json` mode).
    package func progress(done: Int, total: Int?) {
        progressReporter?.report(done: done, total: total)
    }

    /// Writes a line to stdout (human mode).
    package func print(_ line: String) { output.write(line + "\n") }

    /// Writes one JSON value to stdout.
    package func printJSON(_ value: JSON) { output.write(value.rendered() + "\n") }

    /// An environment variable, with empty treated as unset.
    package func env(_ name: String) -> String? {
        guard let value = environment[name], !value.isEmpty else { return nil }
        return value
    }
}
