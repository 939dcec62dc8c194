import Foundation
import Testing
import TestSupport

/// Progress on stderr for long passes: on a terminal only, never in JSON mode or into a pipe.
@Suite struct ProgressTests {
    static let hasScript = FileManager.default.isExecutableFile(atPath: "/usr/bin/script")

    @Test(.enabled(if: ProgressTests.hasScript, "needs script(1) from bsdutils for a pseudo-terminal"))
    func aLongPassOnATerminalShowsRowsDoneAndRateButNotWhenPiped() throws {
        let home = TemporaryDirectory("progress")
        let store = home.file("store.sqlite")
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 60_000, batchSize: 25)
        let env = JobProcess.environment(home: home.path)
        // script(1) gives the pass a pseudo-terminal on stdout and stderr.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", "'\(JobProcess.executablePath)' --store '\(store)' maintain-store", "/dev/null"]
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let terminal = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(terminal)")
        #expect(terminal.contains(" / 60000 rows, "), "progress shows rows done / total and a rate")
        #expect(terminal.contains("/s"))

        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 60_000, batchSize: 25)
        let piped = try JobProcess.run(["--store", store, "maintain-store"], environment: env, timeout: 120)
        #expect(piped.exitCode == 0)
        #expect(!piped.stderr.contains("rows,"), "no progress into a pipe")
    }
}
