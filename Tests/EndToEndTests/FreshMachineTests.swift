import Foundation
import Testing
import TestSupport

/// `job list`, `job status --json`, `job migrate` and `job maintain-store --json` on a machine with no configuration.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct FreshMachineTests {
    @Test func withNoConfigurationTheDefaultStoreIsCreatedUnderXDGStateHome() throws {
        let home = TemporaryDirectory("home")
        let env = JobProcess.environment(home: home.path)
        let list = try JobProcess.run(["list"], environment: env)
        #expect(list.exitCode == 0)
        #expect(list.stdout.contains("maintain-store"))

        let migrate = try JobProcess.run(["migrate"], environment: env)
        #expect(migrate.exitCode == 0, "\(migrate.stderr)")
        let store = home.path + "/.local/state/background-jobs/store.sqlite"
        #expect(FileManager.default.fileExists(atPath: store))

        let pass = try JobProcess.run(["maintain-store", "--json"], environment: env)
        #expect(pass.exitCode == 0, "\(pass.stderr)")
        let result = try pass.jsonObject()
        #expect(result["job"] as? String == "maintain-store")
        #expect(result["outcome"] as? String == "completed")
        #expect(result["started_at"] is String)
        #expect(result["duration_ms"] is Int)
        #expect(result["counts"] is [String: Any])

        let status = try JobProcess.run(["status", "--json"], environment: env)
        #expect(status.exitCode == 0)
        let rows = try #require(try status.json() as? [[String: Any]])
        let row = try #require(rows.first { $0["job"] as? String == "maintain-store" })
        #expect(row["outcome"] as? String == "completed")
        #expect(row["exit_code"] as? Int == 0)
    }

    @Test func stateDirectoryFromSystemdWinsOverXDGStateHome() throws {
        let home = TemporaryDirectory("home")
        let state = TemporaryDirectory("state")
        let env = JobProcess.environment(home: home.path, ["STATE_DIRECTORY": state.path, "XDG_STATE_HOME": home.path + "/xdg"])
        let result = try JobProcess.run(["migrate"], environment: env)
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: state.path + "/store.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: home.path + "/xdg/background-jobs/store.sqlite"))
    }
}
