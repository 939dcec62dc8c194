import Foundation
import Homeserver
import Runner
import Store
import TestSupport

/// An in-process `job` with the runner's and the homeserver helper's modules over a temporary SQLite store: runs
/// commands and passes, and keeps every output and log line for the privacy checks.
final class HelperHarness {
    let job: InProcessJob
    private(set) var outputs: [String] = []

    init(environment: [String: String] = [:]) throws {
        job = InProcessJob(modules: [RunnerModule.module, HomeserverModule.module], environment: environment)
    }

    /// The environment of every command and pass.
    var environment: [String: String] {
        get { job.environment }
        set { job.environment = newValue }
    }

    /// Runs the module command at `path` with `tokens`; returns stdout, or throws its `JobError`.
    @discardableResult
    func command(_ path: [String], _ tokens: [String] = [], now: Date, json: Bool = false) throws -> String {
        guard let command = job.catalog.commands.first(where: { $0.path == path }) else { throw TestFailure("no command \(path)") }
        let output = BufferedOutput()
        let invocation = job.invocation(now: now, json: json, output: output)
        let arguments = try Arguments(parsing: tokens, options: command.options, positionals: command.positionals, commandName: command.displayName)
        let database = try invocation.openStore(job.catalog)
        defer { outputs.append(output.text) }
        try command.run(invocation.context(name: command.displayName, database: database, arguments: arguments, dryRun: false, catalog: job.catalog))
        return output.text
    }

    /// One pass of job `name`.
    func pass(_ name: String, _ tokens: [String] = [], now: Date, json: Bool = false) throws -> PassRunner.Report {
        let (report, text) = try job.pass(name, tokens, now: now, json: json)
        outputs.append(text)
        return report
    }

    func database() throws -> Database { try job.database() }

    /// Every stdout and log line so far.
    var everything: String { (outputs + job.logs).joined(separator: "\n") }
}

/// Fixed values the helper's tests share.
enum Fixture {
    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)
}
