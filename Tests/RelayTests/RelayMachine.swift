import Chaos
import Foundation
import Relay
import Runner
import Store
import TestSupport

/// One relay node driven through the real `job` binary: its home, store (a file or a PostgreSQL database) and
/// environment.
final class RelayMachine {
    let home = TemporaryDirectory("relay-machine")
    let testStore: TestStore
    var store: String { testStore.location }
    var extra: [String: String]

    /// A node over a new store of `kind` (on PostgreSQL: a new database on `cluster`, by default the shared one).
    init(_ kind: StoreKind = .sqlite, cluster: PostgresCluster? = nil, environment: [String: String] = [:]) throws {
        testStore = try TestStore.make(kind, in: home, cluster: cluster)
        extra = environment.merging(testStore.environment) { $1 }
    }

    /// Runs `job --store STORE [--now @SECONDS] arguments…` to completion.
    @discardableResult
    func run(_ arguments: [String], at seconds: Int64? = nil, timeout: TimeInterval = 120) throws -> JobProcess.Result {
        try JobProcess.run(command(arguments, at: seconds), environment: JobProcess.environment(home: home.path, extra), timeout: timeout)
    }

    /// Starts `job …` and returns at once (to signal it).
    func start(_ arguments: [String], at seconds: Int64? = nil) throws -> JobProcess.Running {
        try JobProcess.start(command(arguments, at: seconds), environment: JobProcess.environment(home: home.path, extra))
    }

    private func command(_ arguments: [String], at seconds: Int64?) -> [String] {
        ["--store", store] + (seconds.map { ["--now", "@\($0)"] } ?? []) + arguments
    }

    func register(_ device: String, _ token: String, at seconds: Int64) throws {
        let result = try run(["relay", "register", "--device-id", device, "--apns-token", token], at: seconds)
        guard result.exitCode == 0 else { throw TestFailure("register failed: \(result.stderr)") }
    }

    func trigger(_ device: String, at seconds: Int64) throws {
        let result = try run(["relay", "trigger", "--device-id", device], at: seconds)
        guard result.exitCode == 0 else { throw TestFailure("trigger failed: \(result.stderr)") }
    }

    /// One `send-wakeups` pass with `--json`: its exit code, counts and stderr.
    func sendWakeups(at seconds: Int64) throws -> (exitCode: Int32, counts: [String: Int], stderr: String) {
        let result = try run(["--json", "send-wakeups"], at: seconds)
        let object = (try? result.jsonObject()) ?? [:]
        return (result.exitCode, object["counts"] as? [String: Int] ?? [:], result.stderr)
    }

    /// Bulk registrations written straight into the store file (the rows `relay register` writes), for load.
    /// The store and its key must exist (register one token through the binary first).
    func seed(devices: Int, tokensPerDevice: Int, registeredAt: Int64, triggeredAt: Int64?, deviceID: (Int) -> String, token: (Int, Int) -> String) throws {
        let key = try StoreKeyLocation.resolve(environment: testStore.environment, storePath: store).load()
        try RegistrationSeeder.seed(database: try Database(path: store), storeKey: key, devices: devices, tokensPerDevice: tokensPerDevice,
                                    registeredAt: registeredAt, triggeredAt: triggeredAt, deviceID: deviceID, token: token, result: { _, _ in .none })
    }

    func database() throws -> Database { try Database(path: store) }
}

extension RelayMachine {
    /// Registers one Device ID and seeds 750 more, two tokens each, all triggered a second before `t0`: a pass at
    /// `t0` has 1,500 pushes to make, long enough to be interrupted part-way.
    func seedPendingPushes(at t0: Int64) throws {
        try register(Fixture.deviceID(1), Fixture.token(1), at: t0 - 600)
        try seed(devices: 750, tokensPerDevice: 2, registeredAt: (t0 - 600) * 1000, triggeredAt: (t0 - 1) * 1000,
                 deviceID: { Fixture.deviceID(1000 + $0) }, token: { Fixture.token(1000 + $0 * 2 + $1) })
    }

    /// Runs `send-wakeups` at `t0`, calls `interrupt` once the pass has recorded 50 answers (or has ended, or after
    /// 60 s), and returns the pass's result.
    func passInterrupted(at t0: Int64, by interrupt: () throws -> Void) throws -> JobProcess.Result {
        let running = try start(["send-wakeups"], at: t0)
        let deadline = Date().addingTimeInterval(60)
        let db = try database()
        func answersRecorded() throws -> Int { try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status IS NOT NULL") ?? 0 }
        while try running.process.isRunning && Date() < deadline && answersRecorded() < 50 { usleep(5_000) }
        try interrupt()
        return try running.wait(timeout: 120)
    }
}
