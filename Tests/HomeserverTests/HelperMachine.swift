import Foundation
import Store
import TestSupport

/// One homeserver driven through the real `job` binary: its home, its SQLite store and its environment.
final class HelperMachine {
    let home = TemporaryDirectory("helper-machine")
    var store: String { home.file("store.sqlite") }
    var extra: [String: String]

    init(environment: [String: String] = [:]) throws {
        extra = environment
    }

    /// Runs `job --store STORE [--now @SECONDS] arguments…` to completion.
    @discardableResult
    func run(_ arguments: [String], at seconds: Int64? = nil, timeout: TimeInterval = 120) throws -> JobProcess.Result {
        try JobProcess.run(command(arguments, at: seconds), environment: JobProcess.environment(home: home.path, extra), timeout: timeout)
    }

    /// Starts `job --store STORE arguments…` and returns at once (to signal it).
    func start(_ arguments: [String]) throws -> JobProcess.Running {
        try JobProcess.start(command(arguments, at: nil), environment: JobProcess.environment(home: home.path, extra))
    }

    private func command(_ arguments: [String], at seconds: Int64?) -> [String] {
        ["--store", store] + (seconds.map { ["--now", "@\($0)"] } ?? []) + arguments
    }

    func database() throws -> Database { try Database(path: store) }
}
