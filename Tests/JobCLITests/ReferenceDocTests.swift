import Foundation
import Testing
import TestSupport

/// The committed reference and the man page come from the command table and cannot drift from the binary.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ReferenceDocTests {
    let home = TemporaryDirectory("reference")
    var env: [String: String] { JobProcess.environment(home: home.path) }
    static let committed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/reference/commands.md")

    @Test func theCommittedCommandReferenceIsWhatTheBinaryGenerates() throws {
        let generated = try JobProcess.run(["reference"], environment: env)
        #expect(generated.exitCode == 0)
        let committed = try String(contentsOf: Self.committed, encoding: .utf8)
        #expect(committed == generated.stdout, "docs/reference/commands.md is stale: regenerate it with `job reference > docs/reference/commands.md`")
    }

    @Test func theReferenceListsEveryCommandSettingAndExitCode() throws {
        let text = try JobProcess.run(["reference"], environment: env).stdout
        let catalog = try #require(try JSONSerialization.jsonObject(with: Data(try JobProcess.run(["help", "--json"], environment: env).stdout.utf8)) as? [String: Any])
        for key in ["jobs", "commands"] {
            for name in ((catalog[key] as? [[String: Any]]) ?? []).compactMap({ $0["name"] as? String }) {
                #expect(text.contains("### \(name)\n"), "\(name) is missing from the reference")
            }
        }
        let settings = try JobProcess.run(["--store", home.file("s.sqlite"), "settings", "list"], environment: env).stdout
        for line in settings.split(separator: "\n") {
            let key = String(line.split(separator: " ").first ?? "")
            #expect(text.contains("| `\(key)` |"), "setting \(key) is missing from the reference")
        }
        for code in [0, 64, 65, 69, 70, 73, 75, 78] { #expect(text.contains("\n| \(code) | ")) }
    }

    @Test func prefetchHelpNamesTheSettingsItNeeds() throws {
        let help = try JobProcess.run(["help", "prefetch"], environment: env).stdout
        #expect(help.contains("prefetch.after-id"))
        #expect(help.contains("prefetch.plan-ids"))
    }

    @Test func theManPageHasItsStandardSectionsAndGroffReadsItWithoutWarnings() throws {
        let page = try JobProcess.run(["manpage"], environment: env).stdout
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"] {
            #expect(page.contains("\n.SH \(section)\n"), "no \(section) section")
        }
        #expect(page.unicodeScalars.allSatisfy { $0.isASCII }, "the man page must escape non-ASCII characters")
        let groff = "/usr/bin/groff"
        try #require(FileManager.default.isExecutableFile(atPath: groff), "groff is not installed")
        let file = home.file("job.1")
        try page.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try ExternalTool.run(groff, ["-man", "-ww", "-z", file], environment: ["PATH": "/usr/bin:/bin"], separateStderr: true)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty, "groff warned: \(result.stderr)")
    }
}
