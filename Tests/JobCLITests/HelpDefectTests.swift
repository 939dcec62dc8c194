import Foundation
import Testing
import TestSupport

/// Help and usage errors through the real binary: every option shown, required ones without brackets, names
/// apart from their summaries, subcommands once, and typos in global options answered with a suggestion.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct HelpDefectTests {
    let home = TemporaryDirectory("help")
    var env: [String: String] { JobProcess.environment(home: home.path) }

    func run(_ arguments: [String]) throws -> JobProcess.Result { try JobProcess.run(arguments, environment: env) }

    @Test func helpOfBuiltinsShowsTheirOptionsAndArguments() throws {
        #expect(try run(["help", "deployment"]).stdout.contains("Usage: job [GLOBAL OPTIONS] deployment [--write DIR]\n"))
        #expect(try run(["help", "help"]).stdout.contains("Usage: job [GLOBAL OPTIONS] help [COMMAND]\n"))
    }

    @Test func aRequiredOptionIsShownWithoutBracketsAndMissingItIsAUsageErrorNamingIt() throws {
        #expect(try run(["help", "grants", "issue"]).stdout.contains("grants issue --to ENDPOINT [--lifetime 30d|90d|365d|never] [--label LABEL]\n"))
        let missing = try run(["--store", home.file("s.sqlite"), "grants", "issue"])
        #expect(missing.exitCode == 64)
        #expect(missing.stderr.hasPrefix("job: 'grants issue' needs --to ENDPOINT\n"))
    }

    @Test func everyCommandNameInTheGeneralHelpIsSetApartFromItsSummary() throws {
        let text = try run(["help"]).stdout
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("  contacts delete-all  ") && $0.hasSuffix("forget every contact and revoke every grant this node issued") })
        for line in text.split(separator: "\n") where line.hasPrefix("  ") && !line.hasPrefix("   ") {
            let body = line.dropFirst(2)
            #expect(body.contains("  ") || body.hasPrefix("-"), "name runs into summary: \(line)")
        }
    }

    @Test func theStoreOptionIsShownAsAFileOrAPostgreSQLConnectionStringForTheRelayRole() throws {
        let help = try run(["help"]).stdout
        #expect(help.contains("Usage: job [--store STORE] "))
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        let option = try #require(lines.firstIndex { $0 == "  --store STORE" })
        #expect(lines[option + 1].contains("an SQLite file") && lines[option + 1].contains("relay role a PostgreSQL connection string, postgresql://… or service=NAME"),
                "\(lines[option + 1])")
        let usage = try run(["no-such-command"])
        #expect(usage.exitCode == 64)
        #expect(usage.stderr.contains("Usage: job [--store STORE] "), "\(usage.stderr)")
    }

    @Test func aCommandGroupListsEachSubcommandOnce() throws {
        let mesh = try run(["mesh"])
        #expect(mesh.exitCode == 64)
        #expect(mesh.stderr.hasPrefix("job: 'mesh' needs one of: init, announce, peers, exchange, send-file, sends, panic-wipe, files, show, builds, policy\n"))
        #expect(try run(["mesh", "builds"]).stderr.hasPrefix("job: 'mesh builds' needs one of: add, list\n"))
    }

    @Test func aMistypedGlobalOptionGetsASuggestion() throws {
        let before = try run(["--jsno", "status"])
        #expect(before.exitCode == 64)
        #expect(before.stderr.hasPrefix("job: unknown option --jsno; did you mean --json?\n"))
        let after = try run(["status", "--stor", home.file("s.sqlite")])
        #expect(after.exitCode == 64)
        #expect(after.stderr.hasPrefix("job: unknown option --stor for 'status'; did you mean --store?\n"))
    }

    @Test func meshBuildsAddKeepsItsOwnVersionOption() throws {
        let store = home.file("m.sqlite")
        let added = try run(["--store", store, "mesh", "builds", "add", "--platform", "ios", "--version", "1.2.3", "--channel", "release"])
        #expect(added.exitCode == 0, "\(added.stderr)")
        #expect(added.stdout.contains("1.2.3"))
    }
}
