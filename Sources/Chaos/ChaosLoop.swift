import Foundation

/// The kill loop: measures one undisturbed pass, then runs rounds of "SIGKILL the pass at a uniformly random
/// moment of its measured duration (1–3 times), rerun it undisturbed until the work is settled, check the
/// invariants", until the requested number of kills has landed. With `signal = SIGTERM` the passes are stopped
/// gracefully instead (a stopped pass exits 75), as systemd stops a unit.
package struct ChaosLoop {
    package let process: ChaosProcess
    package let kills: Int
    package let seed: UInt64
    /// The signal that stops a pass: SIGKILL (default) or SIGTERM.
    package var signal: Int32 = SIGKILL
    /// Called with a line of progress (the bench prints it; tests ignore it).
    package var progress: (String) -> Void = { _ in }

    package init(process: ChaosProcess, kills: Int, seed: UInt64) {
        self.process = process
        self.kills = kills
        self.seed = seed
    }

    /// The figures of one job's run.
    package struct Report: Sendable {
        package var job = ""
        package var rows = 0
        /// Duration of the undisturbed pass the kill moments were drawn from.
        package var measuredSeconds = 0.0
        /// SIGKILLs that landed on a running pass.
        package var kills = 0
        /// Kill moments drawn after the pass had already finished on its own.
        package var passesFinishedBeforeKill = 0
        /// Killed passes the ledger recorded as abandoned (the others died before they began their ledger row).
        package var abandonedPasses = 0
        package var rounds = 0
        package var settlingPasses = 0
        /// Invariant violations, each with its round.
        package var violations: [String] = []
        package var seconds = 0.0
    }

    package func run(_ scenario: ChaosScenario, rows: Int) throws -> Report {
        var report = Report()
        report.job = scenario.job
        report.rows = rows
        var random = ChaosRandom(seed: seed)
        let started = Date()
        try scenario.prepare()
        defer { scenario.finish() }
        let process = self.process.adding(scenario.passEnvironment)

        // Round 0: undisturbed, to measure the pass and to check that the model agrees with a clean run.
        try scenario.beginRound(0)
        let measured = try settle(scenario, process, &random, &report, round: 0)
        report.measuredSeconds = measured
        report.violations += try scenario.violations().map { "round 0 (no kill): \($0)" }

        var round = 0
        while report.kills < kills {
            round += 1
            try scenario.beginRound(round)
            let planned = min(Int.random(in: 1...3, using: &random), kills - report.kills)
            let killsBefore = report.kills
            for _ in 0..<planned {
                let delay = Double.random(in: 0..<max(measured, 0.001), using: &random)
                let arguments = scenario.nextPassArguments(settling: false, random: &random)
                let outcome = try process.run(arguments, killAfter: delay, signal: signal)
                if outcome.killed {
                    report.kills += 1
                    report.violations += try scenario.afterKill().map { "round \(round), right after kill \(report.kills): \($0)" }
                } else {
                    report.passesFinishedBeforeKill += 1
                    if outcome.exitCode != 0 {
                        report.violations.append("round \(round): a pass the kill missed exited \(outcome.exitCode.map(String.init) ?? "by signal"): \(outcome.stderr)")
                    }
                }
            }
            _ = try settle(scenario, process, &random, &report, round: round)
            report.violations += try scenario.violations().map { "round \(round): \($0)" }
            let abandoned = try ChaosStore.abandonedPasses(scenario.storePath)
            if abandoned > report.kills - killsBefore {
                report.violations.append("round \(round): \(abandoned) passes recorded abandoned for \(report.kills - killsBefore) kills")
            }
            report.abandonedPasses += abandoned
            if round % 10 == 0 { progress("\(scenario.job): \(report.kills)/\(kills) kills, \(round) rounds, \(report.violations.count) violations") }
            if report.violations.count > 20 { break }
        }
        report.rounds = round
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Runs undisturbed passes until the scenario says the work is done; returns the first pass's seconds.
    private func settle(_ scenario: ChaosScenario, _ process: ChaosProcess, _ random: inout ChaosRandom, _ report: inout Report, round: Int) throws -> Double {
        var first = 0.0
        for attempt in 0..<8 {
            let outcome = try process.run(scenario.nextPassArguments(settling: true, random: &random))
            report.settlingPasses += 1
            if attempt == 0 { first = outcome.seconds }
            guard outcome.exitCode == 0 else {
                throw ChaosFailure("round \(round): the settling pass exited \(outcome.exitCode.map(String.init) ?? "by signal"): \(outcome.stderr)")
            }
            if scenario.isSettled(counts: ChaosProcess.counts(outcome.stdout)) { return first }
        }
        throw ChaosFailure("round \(round): \(scenario.job) did not settle in 8 undisturbed passes")
    }
}
