import Foundation
import Testing
import TestSupport

/// `job doctor` reads the options the passes read and warns of a store it cannot write.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct DoctorReportTests {
    let home = TemporaryDirectory("doctor")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    @Test func doctorChecksTheMetricsDirGivenWithTheOption() throws {
        let missing = try JobProcess.run(["--store", store, "--metrics-dir", home.file("nope"), "doctor"], environment: env)
        #expect(missing.exitCode == 78)
        #expect(missing.stdout.contains("FAIL  metrics-dir: the metrics directory does not exist"), "\(missing.stdout)")
        let present = try JobProcess.run(["--store", store, "--metrics-dir", home.path, "doctor"], environment: env)
        #expect(present.stdout.contains("ok    metrics-dir"), "\(present.stdout)")
    }

    /// A warning, not a failure (docs/operations.md): doctor vets read-only copies and exits 0 unless another check fails.
    @Test func aStoreThisUserCannotWriteIsAWarningNotAFailedCheck() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }  // needs another user
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        chmod(store, 0o444)
        chmod(home.path, 0o777)
        let result = try ExternalTool.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", JobProcess.executablePath,
                                                               "--store", store, "doctor"], environment: env, separateStderr: true)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output.contains("WARN  store-writable: the store is read-only for this user"), "\(result.output)")
        #expect(!result.output.contains("FAIL"), "\(result.output)")
        let writable = try JobProcess.run(["--store", store, "doctor"], environment: env)
        #expect(writable.stdout.contains("ok    store-writable"))
    }
}
