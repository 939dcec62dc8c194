import Foundation
import Testing
import TestSupport
@testable import JobCLI
@testable import Runner

@Suite(.timeLimit(.minutes(15))) struct StatusTests {
    @Test func systemctlShowBlocksAreReadPerTimer() {
        let text = """
            Id=maintain-store.timer
            NextElapseUSecRealtime=Mon 2026-11-30 03:30:12 UTC

            Id=sweep-grants.timer
            NextElapseUSecRealtime=

            """
        #expect(SystemdTimers.parse(text) == ["maintain-store": "Mon 2026-11-30 03:30:12 UTC"])
    }

    @Test func theHumanTableIsAlignedWithOneRowPerJob() throws {
        let directory = TemporaryDirectory("status")
        let app = CommandLineApp(catalog: Catalog(modules: [RunnerModule.module]))
        let store = directory.file("s.sqlite")
        _ = app.run(arguments: ["--store", store, "maintain-store"], environment: ["HOME": directory.path], output: BufferedOutput(), errorOutput: { _ in })
        let output = BufferedOutput()
        #expect(app.run(arguments: ["--store", store, "status"], environment: ["HOME": directory.path], output: output, errorOutput: { _ in }) == .success)
        let lines = output.text.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("JOB "))
        let column = try #require(lines[0].range(of: "LAST")).lowerBound.utf16Offset(in: lines[0])
        #expect(lines[1].hasPrefix("maintain-store"))
        #expect(Array(lines[1].utf16)[column...].starts(with: Array("completed".utf16)), "columns line up")
        #expect(lines[1].contains("pruned_runs=0"))
    }
}
