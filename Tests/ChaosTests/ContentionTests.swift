import Chaos
import Foundation
import Testing
import TestSupport

/// Contention at a small scale (`job-bench contention` runs 60 s per job): eight `clean-tokens` passes
/// started over and over plus a writer process registering tokens, recording triggers and issuing grants, on one store.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ContentionTests {
    @Test func eightPassesAndTheAppShareOneStoreWithoutBusyErrorsOrOverlappingPasses() throws {
        let directory = TemporaryDirectory("contention")
        let process = ChaosProcess(executable: JobProcess.executablePath, environment: JobProcess.environment(home: directory.path))
        // A store with work for the passes: seeded by the chaos scenario's template.
        let store = ChaosStore(directory: directory.path)
        let scenario = CleanTokensChaos(store: store, process: process, tokens: 4_000, seed: 21)
        try scenario.prepare()
        try store.freshCopy()
        let contention = Contention(process: process, store: store.store, job: "clean-tokens", seconds: 6) { _ in ["--json", "clean-tokens"] }
        let report = try contention.run(startNow: 1_780_000_000_000)
        #expect(report.holds, "\(report)")
        #expect(report.passes >= 8 && report.worked >= 1 && report.writerCommands >= 6, "\(report)")
        #expect(report.failures.isEmpty, "\(report.failures)")
    }
}
