import Foundation
import Testing
import TestSupport

/// Shell completion and the man page come from the command table: they offer and list every command.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct CompletionAndManpageTests {
    let home = TemporaryDirectory("completion")
    var env: [String: String] { JobProcess.environment(home: home.path) }

    /// What bash completion offers after `words` (the last one being completed).
    func complete(_ words: [String]) throws -> [String] {
        let script = home.file("job.bash")
        try JobProcess.run(["completions", "bash"], environment: env).stdout.write(toFile: script, atomically: true, encoding: .utf8)
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let result = try ExternalTool.run("/bin/bash", ["-c", "source '\(script)'; COMP_WORDS=(job \(quoted)); COMP_CWORD=\(words.count); _job; printf '%s\\n' \"${COMPREPLY[@]}\""],
                                          separateStderr: true)
        #expect(result.status == 0, "\(result.stderr)")
        return result.output.split(separator: "\n").map(String.init)
    }

    @Test func bashCompletionOffersCommandsSubcommandsOptionsAndSettingKeys() throws {
        #expect(try complete(["maint"]) == ["maintain-store"])
        #expect(Set(try complete([""])).isSuperset(of: ["list", "status", "grants", "mesh", "sweep-grants", "--store", "--json"]))
        #expect(try complete(["--store", "/tmp/x", "grants", ""]) == ["issue", "accept", "list", "revoke"])
        #expect(try complete(["mesh", "builds", ""]) == ["add", "list"])
        #expect(try complete(["grants", "issue", "--"]) == ["--to", "--lifetime", "--label"])
        #expect(try complete(["settings", "set", "runs."]) == ["runs.retention-days", "runs.prune-batch-size"])
    }

    /// What bash completion offers after `words`, run in `folder` (file names complete relative to it).
    func complete(_ words: [String], in folder: String) throws -> [String] {
        let script = home.file("job.bash")
        try JobProcess.run(["completions", "bash"], environment: env).stdout.write(toFile: script, atomically: true, encoding: .utf8)
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let result = try ExternalTool.run("/bin/bash", ["-c", "cd '\(folder)' && source '\(script)'; COMP_WORDS=(job \(quoted)); COMP_CWORD=\(words.count); _job; printf '%s\\n' \"${COMPREPLY[@]}\""],
                                          separateStderr: true)
        #expect(result.status == 0, "\(result.stderr)")
        return result.output.split(separator: "\n").map(String.init).sorted()
    }

    @Test func fileOptionsCompleteFileNamesNotCommandWords() throws {
        let folder = TemporaryDirectory("completion-files")
        #expect(FileManager.default.createFile(atPath: folder.file("stash.sqlite"), contents: nil))
        #expect(FileManager.default.createFile(atPath: folder.file("ticket.txt"), contents: nil))
        try FileManager.default.createDirectory(atPath: folder.file("stdir"), withIntermediateDirectories: true)
        #expect(try complete(["--store", "st"], in: folder.path) == ["stash.sqlite", "stdir"], "not the command 'status'")
        #expect(try complete(["--metrics-dir", "st"], in: folder.path) == ["stdir"])
        #expect(try complete(["offers", "send", "--ticket-file", "ti"], in: folder.path) == ["ticket.txt"])
        #expect(try complete(["mesh", "files", "export", "0123abcd", "--to", "ti"], in: folder.path) == ["ticket.txt"])
        #expect(try complete(["--log-format", ""], in: folder.path) == ["json", "text"])
        #expect(try complete(["--now", "st"], in: folder.path) == [], "a time has no completion, and never a command")
        #expect(try complete(["--store", "s.sqlite", "maint"], in: folder.path) == ["maintain-store"], "after the value, commands again")
    }

    @Test func anOptionAlreadyGivenIsNotOfferedAgain() throws {
        #expect(try complete(["grants", "revoke", ""]) == ["--peer"])
        #expect(try complete(["grants", "revoke", "--peer", "alice", ""]) == [])
        #expect(!(try complete(["--json", ""])).contains("--json"))
    }

    @Test func zshAndFishScriptsAreGeneratedAndAnUnknownShellIsAUsageError() throws {
        #expect(try JobProcess.run(["completions", "zsh"], environment: env).stdout.contains("bashcompinit"))
        let fish = try JobProcess.run(["completions", "fish"], environment: env).stdout
        #expect(fish.contains("complete -c job -n '__fish_seen_subcommand_from grants' -a 'issue accept list revoke'"))
        #expect(try JobProcess.run(["completions", "tcsh"], environment: env).exitCode == 64)
    }

    @Test func everyCommandIsInTheManPageAndManRendersIt() throws {
        let page = try JobProcess.run(["manpage"], environment: env).stdout
        #expect(page.hasPrefix(".TH JOB 1 "))
        let catalog = try #require(try JSONSerialization.jsonObject(with: Data(try JobProcess.run(["help", "--json"], environment: env).stdout.utf8)) as? [String: Any])
        var names: [String] = []
        for key in ["jobs", "builtins", "commands"] { names += ((catalog[key] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String } }
        #expect(names.count > 40)
        for name in names { #expect(page.contains(".B " + name.replacingOccurrences(of: "-", with: "\\-")), "\(name) is missing from the man page") }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/man") else { return }
        let file = home.file("job.1")
        try page.write(toFile: file, atomically: true, encoding: .utf8)
        let rendered = try ExternalTool.run("/usr/bin/man", ["-l", file], environment: ["MANPAGER": "cat", "MANWIDTH": "100", "PATH": "/usr/bin:/bin"], separateStderr: true)
        #expect(rendered.status == 0, "\(rendered.stderr)")
        #expect(rendered.output.contains("sweep-grants"))
        #expect(rendered.output.contains("EXIT STATUS"))
    }
}
