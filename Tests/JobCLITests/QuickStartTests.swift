import Chaos
import Foundation
import Testing
import TestSupport

/// The README's quick starts run as written against scratch stores, and print what the README says they print.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct QuickStartTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let blocks = QuickStart.parse((try? String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)) ?? "")

    @Test func theReadmeHasAQuickStartForEveryRole() {
        let titles = Self.blocks.map(\.title)
        for role in ["grant node", "token pool", "relay", "homeserver", "mesh media"] {
            #expect(titles.contains { $0.lowercased().contains(role) }, "no quick start for the \(role)")
        }
        #expect(Self.blocks.allSatisfy { !$0.steps.isEmpty && $0.steps.contains { !$0.expected.isEmpty } })
    }

    @Test(arguments: blocks.map(\.title))
    func aQuickStartRunsAsWrittenAndPrintsWhatItSays(_ title: String) throws {
        let block = try #require(Self.blocks.first { $0.title == title })
        let folder = TemporaryDirectory("quickstart")
        try block.script.write(toFile: folder.file("quickstart.sh"), atomically: true, encoding: .utf8)
        let binaries = URL(fileURLWithPath: JobProcess.executablePath).deletingLastPathComponent().path
        var environment = ["HOME": folder.path, "PATH": "\(binaries):/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                           "XDG_STATE_HOME": folder.file("state")]
        if title.contains("PostgreSQL") {
            // The server the quick start assumes: a throwaway cluster on a Unix socket, with an empty database `relay`.
            let cluster = try PostgresCluster.shared()
            try cluster.execute("DROP DATABASE IF EXISTS relay")
            try cluster.createDatabase("relay")
            environment.merge(["PGHOST": cluster.socketDirectory, "PGPORT": String(cluster.port), "PGUSER": PostgresCluster.superuser]) { $1 }
        }
        let run = try ExternalTool.run("/usr/bin/timeout", ["120", "/bin/sh", "-c", "cd '\(folder.path)' && exec /bin/sh quickstart.sh"],
                                       environment: environment, separateStderr: true)
        let stderr = (try? String(contentsOfFile: folder.file("stderr.log"), encoding: .utf8)) ?? ""
        #expect(run.status == 0, "the quick start did not finish: \(run.stderr)\n\(stderr)")
        let outputs = block.outputs(of: run.output)
        for (step, actual) in zip(block.steps, outputs) {
            let same = actual.count == step.expected.count && zip(actual, step.expected).allSatisfy { QuickStart.matches($0, shape: $1) }
            #expect(same, "$ \(step.command)\nprinted:\n\(actual.joined(separator: "\n"))\nexpected:\n\(step.expected.joined(separator: "\n"))\nstderr:\n\(stderr.suffix(2000))")
        }
    }

    @Test func aShapeMatchesOnlyTheTextAroundItsEllipses() {
        #expect(QuickStart.matches("offer 86cf: offered", shape: "offer …: offered"))
        #expect(QuickStart.matches("a 12 ms b=1 c=2", shape: "a … ms b=1 …"))
        #expect(!QuickStart.matches("offer 86cf: refused", shape: "offer …: offered"))
        #expect(!QuickStart.matches("lapsed=0 x", shape: "lapsed=1 …"))
        #expect(!QuickStart.matches("ab", shape: "ab…b"))
        #expect(QuickStart.matches("exact", shape: "exact"))
    }

    @Test func aTranscriptSplitsIntoCommandsAndTheirOutput() {
        let blocks = QuickStart.parse("## Quick start: x\n\n```sh quickstart\n$ echo a\na\n$ true\n$ echo b; echo c\nb\nc\n```\n```sh\n$ not run\n```\n")
        #expect(blocks.count == 1)
        #expect(blocks.first?.title == "Quick start: x")
        #expect(blocks.first?.steps.map(\.command) == ["echo a", "true", "echo b; echo c"])
        #expect(blocks.first?.steps.map(\.expected) == [["a"], [], ["b", "c"]])
    }
}
