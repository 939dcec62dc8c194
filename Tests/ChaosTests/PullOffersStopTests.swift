import Chaos
import Foundation
import Store
import Testing
import TestSupport

/// A `pull-offers` pass stopped by SIGTERM part-way reports the offers it committed, through the built `job`: Alice
/// serves the link (`job serve-link`, QUIC on loopback) holding 1,000 offers for Bob, five per frame, each frame
/// committed by Bob as it arrives.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PullOffersStopTests {
    @Test func aStoppedPassReportsTheOffersItCollectedInTheJSONTheLedgerAndTheMetrics() throws {
        let directory = TemporaryDirectory("pull-stop")
        let env = JobProcess.environment(home: directory.path)
        let scenario = PullOffersChaos(directory: directory.path, process: ChaosProcess(executable: JobProcess.executablePath, environment: env),
                                       held: 1_000, history: 0, seed: 25)
        try scenario.prepare()
        try scenario.beginRound(0)
        defer { scenario.finish() }
        let store = scenario.storePath
        let metrics = directory.file("metrics")
        let running = try JobProcess.start(["--store", store, "--now", "@1780000000", "--json", "--metrics-dir", metrics, "pull-offers", "--check-now"],
                                           environment: env)
        // Stop it once some frames have committed, well before the last.
        let bob = try Database(path: store)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, running.process.isRunning, (try bob.scalar("SELECT count(*) FROM incoming_offers") ?? 0) < 30 { usleep(2_000) }
        running.signal(SIGTERM)
        let result = try running.wait()
        let stored: Int = try bob.scalar("SELECT count(*) FROM incoming_offers") ?? 0
        try #require(result.exitCode == 75, "stopped part-way (a faster machine may need more offers): \(result.exitCode) \(result.stderr)")
        #expect(stored > 0 && stored < 1_000, "some frames committed, not all: \(stored)")
        let object = try result.jsonObject()
        let counts = try #require(object["counts"] as? [String: Any], "\(object)")
        #expect(counts["collected"] as? Int == stored, "\(counts)")
        let ledger: String = try bob.scalar("SELECT counts FROM job_runs WHERE job = 'pull-offers' ORDER BY id DESC LIMIT 1") ?? ""
        #expect(ledger.contains("\"collected\":\(stored)"), "\(ledger)")
        let prom = try String(contentsOfFile: metrics + "/pull-offers.prom", encoding: .utf8)
        #expect(prom.contains("kind=\"collected\"} \(stored)"), "\(prom)")
    }
}
