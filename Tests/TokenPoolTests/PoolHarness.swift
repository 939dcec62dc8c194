import Cryptography
import Foundation
import Runner
import Store
import TestSupport
@testable import TokenPool

/// Runs TokenPool commands and passes in-process over a temporary store, with captured output and logs.
final class PoolHarness {
    let job: InProcessJob

    /// The test identity keys (Endorser's test identities and the did-jwt vector key).
    static let keyA = "2b6472c026ec2aa2c4235c994a63868fc9212d18b58f6cbfe861b52e71330f5b"
    static let didA = "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F"
    static let keyB = "278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f"
    static let didB = "did:ethr:0xF3beAC30C498D9E26865F34fCAa57dBB935b0D74"
    static let afterID = "01HZX3Y4J6M8P9Q0R1S2T3V4W5"

    init(environment: [String: String] = [:]) {
        job = InProcessJob(modules: [RunnerModule.module, TokenPoolModule.module], environment: environment)
    }

    /// What a command or pass left.
    struct Outcome {
        let exitCode: ExitCode
        let stdout: String
        let error: JobError?
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw TestFailure("stdout is not a JSON object: \(stdout)")
            }
            return object
        }
    }

    /// Runs the module command named by the leading words of `words`.
    @discardableResult
    func command(_ words: [String], now: Date? = nil, json: Bool = false, stdin: String = "") throws -> Outcome {
        let catalog = job.catalog
        guard let command = catalog.commands.filter({ words.starts(with: $0.path) }).max(by: { $0.path.count < $1.path.count }) else {
            throw TestFailure("no command \(words)")
        }
        let output = BufferedOutput()
        let invocation = job.invocation(now: now, json: json, output: output, stdin: Array(stdin.utf8))
        let arguments = try Arguments(parsing: Array(words.dropFirst(command.path.count)), options: command.options,
                                      positionals: command.positionals, commandName: command.displayName)
        let database = try invocation.openStore(catalog)
        let context = invocation.context(name: command.displayName, database: database, arguments: arguments, dryRun: false, catalog: catalog)
        do {
            try command.run(context)
            return Outcome(exitCode: .success, stdout: output.text, error: nil)
        } catch {
            let failure = StoreFailure.jobError(for: error)
            return Outcome(exitCode: failure.exitCode, stdout: output.text, error: failure)
        }
    }

    /// Runs one pass of `name`.
    @discardableResult
    func pass(_ name: String, _ tokens: [String] = [], now: Date, json: Bool = true) throws -> Outcome {
        let (report, output) = try job.pass(name, tokens, now: now, json: json)
        return Outcome(exitCode: report.exitCode, stdout: output, error: report.error)
    }

    func importKey(_ hex: String) throws {
        let result = try command(["identity", "import"], stdin: hex + "\n")
        guard result.exitCode == .success else { throw TestFailure("import failed: \(String(describing: result.error))") }
    }

    func setting(_ key: String, _ value: String) throws {
        let result = try command(["settings", "set", key, value])
        guard result.exitCode == .success else { throw TestFailure("settings set failed: \(String(describing: result.error))") }
    }

    /// `pool export --json`'s tokens.
    func exportedTokens() throws -> [String] {
        let result = try command(["pool", "export"], json: true)
        return try result.json()["tokens"] as? [String] ?? []
    }

    func database() throws -> Database { try job.database() }

    /// The store key as a keyring (the same key the commands use).
    func keyring() throws -> StoreKeyring {
        try StoreKeyring(storeKey: StoreKeyLocation.resolve(environment: job.environment, storePath: job.storePath).load())
    }
}

/// An instant from an RFC 3339 string.
func instant(_ text: String) -> Date { Clock.parse(text)! }

/// The instant `unixSeconds`.
func instant(unix seconds: Int64) -> Date { Date(timeIntervalSince1970: Double(seconds)) }
