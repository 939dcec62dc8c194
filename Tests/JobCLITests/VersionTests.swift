import Foundation
import Testing
import TestSupport

/// `job --version` and `job version [--json]` through the real binary.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct VersionTests {
    let home = TemporaryDirectory("version")

    @Test func dashDashVersionPrintsOneLineWithTheVersionSwiftAndLibraries() throws {
        let result = try JobProcess.run(["--version"], environment: JobProcess.environment(home: home.path))
        #expect(result.exitCode == 0)
        #expect(result.stdout.hasPrefix("job 0.1.0"))
        #expect(result.stdout.contains("Swift 6."))
        #expect(result.stdout.contains("sqlite 3."))
        #expect(result.stdout.contains("openssl OpenSSL 3"))
        #expect(result.stdout.contains("curl "))
        #expect(result.stdout.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: home.path + "/.local"), "no store is opened for --version")
    }

    @Test func versionJSONCarriesVersionCommitWhenKnownSwiftAndLibraryVersions() throws {
        let env = JobProcess.environment(home: home.path)
        let plain = try JobProcess.run(["version", "--json"], environment: env).jsonObject()
        #expect(plain["version"] as? String == "0.1.0")
        #expect(plain["commit"] is NSNull, "no BUILD_COMMIT next to the binary: unknown")
        #expect((plain["swift"] as? String)?.hasPrefix("6.") == true)
        let libraries = try #require(plain["libraries"] as? [String: String])
        #expect(Set(libraries.keys) == ["sqlite", "openssl", "curl"])
        #expect(libraries["sqlite"]?.hasPrefix("3.") == true)

        // A copy of the binary with a BUILD_COMMIT file beside it reports that commit.
        let copy = home.file("job")
        try FileManager.default.copyItem(atPath: JobProcess.executablePath, toPath: copy)
        try Data("0123456789abcdef0123456789abcdef01234567\n".utf8).write(to: URL(fileURLWithPath: home.file("BUILD_COMMIT")))
        let withCommit = try ExternalTool.run(copy, ["version", "--json"], environment: env, separateStderr: true)
        #expect(withCommit.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(withCommit.output.utf8)) as? [String: Any])
        #expect(object["commit"] as? String == "0123456789abcdef0123456789abcdef01234567")
    }

    @Test func versionTakesNoArguments() throws {
        let result = try JobProcess.run(["version", "extra"], environment: JobProcess.environment(home: home.path))
        #expect(result.exitCode == 64)
    }
}
