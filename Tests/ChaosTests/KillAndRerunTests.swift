import Chaos
import Foundation
import Testing
import TestSupport

/// The chaos harness at a small scale: each job's pass SIGKILLed at random moments and rerun, its
/// invariants checked against the independent model (the full-scale runs are `job-bench chaos`).
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct KillAndRerunTests {
    static let kills = 4

    func loop(_ directory: TemporaryDirectory, environment: [String: String] = [:], seed: UInt64) -> ChaosLoop {
        ChaosLoop(process: ChaosProcess(executable: JobProcess.executablePath, environment: JobProcess.environment(home: directory.path, environment)),
                  kills: Self.kills, seed: seed)
    }

    @Test func cleanTokensRemovesExactlyTheInvalidTokensWhateverTheKills() throws {
        let directory = TemporaryDirectory("chaos-clean")
        let loop = loop(directory, seed: 11)
        let scenario = CleanTokensChaos(store: ChaosStore(directory: directory.path), process: loop.process, tokens: 4_000, seed: 11)
        let report = try loop.run(scenario, rows: 4_000)
        #expect(report.kills == Self.kills)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }

    @Test func sendWakeupsNeverPushesATokenTwiceInAWindowAndLosesNoWakeUp() throws {
        let directory = TemporaryDirectory("chaos-wake")
        let loop = loop(directory, seed: 12)
        let scenario = SendWakeupsChaos(store: ChaosStore(directory: directory.path), process: loop.process, tokens: 2_000, seed: 12)
        let report = try loop.run(scenario, rows: 2_000)
        #expect(report.kills == Self.kills)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }

    /// The kill loop: passes stopped by SIGTERM at random moments keep every answer they
    /// received, so across the stopped passes and their reruns each due token is pushed exactly once.
    @Test func sendWakeupsStoppedBySigtermPushesEachTokenExactlyOncePerTrigger() throws {
        let directory = TemporaryDirectory("chaos-wake-term")
        var loop = loop(directory, seed: 16)
        loop.signal = SIGTERM
        let scenario = SendWakeupsChaos(store: ChaosStore(directory: directory.path), process: loop.process, tokens: 2_000, seed: 16, graceful: true)
        let report = try loop.run(scenario, rows: 2_000)
        #expect(report.kills == Self.kills)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }

    @Test func sweepGrantsLapsesEveryIdleGrantExactlyOnceAndPurgesOnlyPastRetention() throws {
        let directory = TemporaryDirectory("chaos-sweep")
        let loop = loop(directory, seed: 13)
        let scenario = SweepGrantsChaos(store: ChaosStore(directory: directory.path), process: loop.process, rows: 4_000, seed: 13)
        let report = try loop.run(scenario, rows: 4_000)
        #expect(report.kills == Self.kills)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }

    @Test func mintPoolLeavesTheOldPoolOrTheWholeNewOneNeverAMix() throws {
        let directory = TemporaryDirectory("chaos-pool")
        let loop = loop(directory, seed: 14)
        let scenario = MintPoolChaos(store: ChaosStore(directory: directory.path), process: loop.process, size: 1_500)
        let report = try loop.run(scenario, rows: 1_500)
        #expect(report.kills == Self.kills)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }

    @Test func pullOffersDeliversEachHeldOfferExactlyOnceInEffect() throws {
        let directory = TemporaryDirectory("chaos-pull")
        let loop = loop(directory, seed: 15)
        let scenario = PullOffersChaos(directory: directory.path, process: loop.process, held: 150, history: 1_000, seed: 15)
        let report = try loop.run(scenario, rows: 1_150)
        #expect(report.kills == Self.kills)
        #expect(report.violations.isEmpty, "\(report.violations)")
    }
}
