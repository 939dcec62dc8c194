import Foundation
import Runner
import Synchronization

/// Runs commands and job passes inside the test process, against a store in a temporary folder,
/// capturing stdout and log lines. Faster than a process; use `JobProcess` for signals and concurrency.
package final class InProcessJob {
    package let directory: TemporaryDirectory
    package let catalog: Catalog
    /// The store location: `store.sqlite` in `directory` unless a test points it elsewhere (a PostgreSQL URI).
    package var storePath: String
    package var environment: [String: String]
    /// Log lines, appended by the logger's sink from whichever thread logs.
    private let logLines = LogLines()

    package init(modules: [Module], environment: [String: String] = [:]) {
        directory = TemporaryDirectory("inproc")
        storePath = directory.file("store.sqlite")
        catalog = Catalog(modules: modules)
        self.environment = environment
    }

    /// Log lines written so far.
    package var logs: [String] { logLines.all }

    /// An invocation over this store at `now`, capturing output into `output`.
    package func invocation(now: Date? = nil, json: Bool = false, output: BufferedOutput = BufferedOutput(), stdin: [UInt8] = [],
                           metricsDirectory: String? = nil) -> Invocation {
        Invocation(storePath: storePath, clock: now.map(Clock.fixed) ?? .system, jsonOutput: json, logFormat: .text, logLevel: .debug,
                   metricsDirectory: metricsDirectory, environment: environment, output: output,
                   logSink: { [logLines] line in logLines.append(line) },
                   readInput: { stdin })
    }

    /// Runs one pass of the job named `name` and returns its report and stdout.
    package func pass(_ name: String, _ tokens: [String] = [], now: Date? = nil, json: Bool = false) throws -> (report: PassRunner.Report, output: String) {
        guard let job = catalog.job(named: name) else { throw TestFailure("no job named \(name)") }
        let output = BufferedOutput()
        let invocation = invocation(now: now, json: json, output: output)
        let runner = PassRunner(catalog: catalog, invocation: invocation)
        let options = job.options + [OptionSpec.flag("--dry-run", "")]
        let arguments = try Arguments(parsing: tokens, options: options, positionals: [], commandName: name)
        let database = try invocation.openStore(catalog)
        let report = runner.pass(job, database: database, arguments: arguments, logger: invocation.logger(for: name))
        return (report, output.text)
    }

    /// Opens the store (migrated) for direct inspection.
    package func database() throws -> Database { try invocation().openStore(catalog) }

    private final class LogLines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }
}
