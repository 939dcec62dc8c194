import Foundation
import Testing
import TestSupport

/// With `--json`, stdout is exactly one JSON value for every command, failures included.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct JSONOutputTests {
    let home = TemporaryDirectory("json")
    var env: [String: String] { JobProcess.environment(home: home.path) }
    var store: String { home.file("s.sqlite") }

    func object(_ arguments: [String]) throws -> (code: Int32, object: [String: Any]) {
        let result = try JobProcess.run(arguments, environment: env)
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return (result.exitCode, try #require(value as? [String: Any], "stdout: \(result.stdout)"))
    }

    @Test func failuresPrintOneJSONObjectWithErrorCategoryMessageExitCodeAndSchemaVersion() throws {
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: home.file("bad.sqlite")))
        let cases: [([String], Int32, String)] = [
            (["--json", "--store", store, "grants", "issue"], 64, "usage"),
            (["--json", "--now", "2026-02-30T00:00:00Z", "list"], 64, "usage"),
            (["nosuchcommand", "--json"], 64, "usage"),
            (["--json", "--store", home.file("bad.sqlite"), "settings", "list"], 73, "store-not-a-database"),
            (["--json", "--store", store, "settings", "set", "runs.retention-days", "0"], 64, "usage"),
        ]
        for (arguments, code, category) in cases {
            let (exit, object) = try object(arguments)
            #expect(exit == code, "\(arguments)")
            #expect(object["exit_code"] as? Int == Int(code), "\(arguments)")
            #expect(object["schema_version"] as? Int == 1)
            let error = try #require(object["error"] as? [String: Any], "\(arguments)")
            #expect(error["category"] as? String == category, "\(arguments)")
            #expect((error["message"] as? String)?.isEmpty == false)
        }
    }

    @Test func withoutJSONAFailurePrintsNothingOnStdout() throws {
        let result = try JobProcess.run(["--store", store, "grants", "issue"], environment: env)
        #expect(result.exitCode == 64)
        #expect(result.stdout.isEmpty)
    }

    @Test func deploymentAndHelpOfOneCommandAreJSONToo() throws {
        let deployment = try object(["deployment", "--json"])
        #expect(deployment.code == 0)
        let files = try #require(deployment.object["files"] as? [[String: Any]])
        #expect(files.contains { $0["path"] as? String == "crontab.example" })
        #expect(files.allSatisfy { $0["content"] is String })

        let help = try object(["help", "grants", "issue", "--json"])
        #expect(help.code == 0)
        #expect(help.object["name"] as? String == "grants issue")
        #expect(help.object["usage"] as? String == "job [GLOBAL OPTIONS] grants issue --to ENDPOINT [--lifetime 30d|90d|365d|never] [--label LABEL]")
        let options = try #require(help.object["options"] as? [[String: Any]])
        #expect(options.first { $0["name"] as? String == "--to" }?["required"] as? Bool == true)
    }
}
