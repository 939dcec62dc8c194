import Chaos
import Foundation
import TestSupport

/// A relay store of its own on the shared PostgreSQL cluster, a store key for it, an APNs stand-in, and `job`
/// runs against them at a chosen `--now` (the set-up the multi-host claim and clock tests share).
final class PostgresRelayLab {
    let directory: TemporaryDirectory
    let cluster: PostgresCluster
    let database: PostgresCluster.Database
    let standIn: APNsStandInProcess
    let environment: [String: String]
    private let job: ChaosProcess
    /// A fixed start time (Unix seconds) the tests count from.
    let t0: Int64 = 1_790_000_000

    init(_ label: String) throws {
        directory = TemporaryDirectory("multihost-\(label)")
        cluster = try PostgresCluster.shared()
        database = try cluster.createDatabase(label: label.replacingOccurrences(of: "-", with: "_"))
        let keyFile = directory.path + "/store-key"
        guard FileManager.default.createFile(atPath: keyFile, contents: Data((0..<32).map { UInt8($0 * 5 % 256) }),
                                             attributes: [.posixPermissions: 0o600]) else { throw TestFailure("cannot write the store key") }
        standIn = try APNsStandInProcess(directory: directory.path, answers: [:])
        environment = JobProcess.environment(home: directory.path, standIn.environment.merging(["JOB_STORE_KEY_FILE": keyFile]) { $1 })
        job = ChaosProcess(executable: JobProcess.executablePath, environment: environment)
    }

    deinit { standIn.stop() }

    /// `job --store <this store> --now @seconds --json arguments…`.
    func run(at seconds: Int64, _ arguments: [String]) throws -> ChaosProcess.Outcome {
        try job.run(["--store", database.url, "--now", "@\(seconds)", "--json"] + arguments)
    }
}
