import Foundation
import Homeserver
import Relay
import Runner
import Store
import TestSupport

/// An in-process `job` with the relay and homeserver-helper modules over a temporary store of either kind: runs commands and passes,
/// and keeps every output and log line for the privacy checks.
final class RelayHarness {
    let job: InProcessJob
    let store: TestStore
    private(set) var outputs: [String] = []

    init(_ kind: StoreKind = .sqlite, environment: [String: String] = [:]) throws {
        job = InProcessJob(modules: [RunnerModule.module, RelayModule.module, HomeserverModule.module], environment: environment)
        store = try TestStore.make(kind, in: job.directory)
        job.storePath = store.location
        job.environment = environment.merging(store.environment) { $1 }
    }

    /// The environment of every command and pass; the store's own settings (its key file) always stay in it.
    var environment: [String: String] {
        get { job.environment }
        set { job.environment = newValue.merging(store.environment) { $1 } }
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

    func register(_ device: String, _ token: String, environment: String = "production", now: Date) throws {
        try command(["relay", "register"], ["--device-id", device, "--apns-token", token, "--environment", environment], now: now)
    }
}

/// Test identifiers: valid-looking Device IDs and APNs tokens, distinct per `n`.
enum Fixture {
    static func deviceID(_ n: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var chars: [Character] = []
        var x = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 &+ 12345
        for _ in 0..<56 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            chars.append(alphabet[Int(x >> 59)])
        }
        return stride(from: 0, to: 56, by: 7).map { String(chars[$0..<$0 + 7]) }.joined(separator: "-")
    }

    static func token(_ n: Int) -> String {
        let head = String(format: "%08x", n)
        return head + String(repeating: "c0ffee", count: 9) + "00"
    }

    static let t0 = Date(timeIntervalSince1970: 1_780_000_000)
}
