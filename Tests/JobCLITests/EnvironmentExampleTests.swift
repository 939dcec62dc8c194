import Foundation
import Testing
import TestSupport

/// A relay operator sent to the env example finds the StoreKit variables serve-relay needs there.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct EnvironmentExampleTests {
    let home = TemporaryDirectory("envexample")

    @Test func theEnvExampleAndServeRelayHelpNameTheStoreKitVariables() throws {
        let env = JobProcess.environment(home: home.path)
        let files = try JobProcess.run(["--json", "deployment"], environment: env).jsonObject()["files"] as? [[String: Any]] ?? []
        let example = try #require(files.first { $0["path"] as? String == "jobs/background-jobs.env.example" }?["content"] as? String)
        for key in ["STOREKIT_BUNDLE_ID", "STOREKIT_PRODUCT_IDS", "STOREKIT_ENVIRONMENTS", "STOREKIT_ROOT_CA_FILE"] {
            #expect(example.contains("\n#\(key)=\n"), "\(key) is missing from the env example")
        }
        let help = try JobProcess.run(["help", "serve-relay"], environment: env).stdout
        #expect(help.contains("Environment:\n  STOREKIT_BUNDLE_ID\n"))
    }
}
