import Chaos
import Foundation
import MeshMedia
import Relay
import Grants
import Homeserver
import TokenPool

/// `fuzz`: at least N mutated inputs (default 1,000,000) through every decoder that reads bytes from outside:
/// the homeserver helper's (`HomeserverFuzzing`: config.xml, Syncthing REST answers, relay health and Retry-After), the
/// relay's (`RelayFuzzing`: APNs answers),
/// the grants module's (`GrantsFuzzing`: link frames, grant bundles, link addresses, endpoint ids) and the token
/// pool's (`TokenPoolFuzzing`: Endorser answers) through `MutationFuzzer`, and MeshMedia's (`WireFuzzer`: packets, TLVs, Noise messages) run until each of
/// its decoders has had N inputs.
///
/// Per decoder: inputs, accepted, rejected, slowest input, hangs (inputs over 1 s; a decode over 10 s ends the
/// run with the input printed), resident-set growth. The baseline, in the same run, is generating the same
/// inputs without decoding them. A crash ends the process (exit by signal) — that is the failure signal.
enum FuzzBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var inputs = 1_000_000
        var seed: UInt64 = 0xF022
        var only: String?
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--inputs":
                inputs = try BenchOption.integer(&rest, "--inputs", in: 1...100_000_000)
            case "--seed":
                seed = try BenchOption.seed(&rest)
            case "--only":
                guard let value = rest.popFirst() else { throw BenchUsageError(message: "--only needs a word of a decoder name, or mesh") }
                only = value
            case "--help", "-h":
                print("usage: job-bench fuzz [--inputs N] [--seed S] [--only WORD]")
                print("  --inputs N   inputs per decoder (default 1000000)")
                print("  --seed S     PRNG seed (default \(0xF022)); the run is deterministic in it")
                print("  --only WORD  only decoders whose name contains WORD (\"mesh\" for MeshMedia's)")
                return
            default: throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        let watchdog = Watchdog(limitSeconds: 10)
        var rows: [[String]] = []
        var totalHangs = 0
        var totalFindings = 0
        func kb(_ growth: Int) -> String { "\(growth) kB" }

        print("fuzz: \(inputs) inputs per decoder, seed \(seed)")
        let targets: [MutationFuzzer.Target] = HomeserverFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
            + RelayFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
            + GrantsFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
            + TokenPoolFuzzing.decoders.map { MutationFuzzer.Target(name: $0.name, seeds: $0.seeds, decode: $0.decode) }
        for (offset, target) in targets.enumerated() where only.map({ target.name.contains($0) }) ?? true {
            let decoder = target
            let baseline = MutationFuzzer(seed: seed &+ UInt64(offset)).generateOnly(target, inputs: inputs)
            let report = MutationFuzzer(seed: seed &+ UInt64(offset)).run(target, inputs: inputs, watchdog: watchdog) { done in
                FileHandle.standardError.write(Data("fuzz \(decoder.name): \(done)\n".utf8))
            }
            totalHangs += report.hangs
            rows.append([report.name, "\(report.inputs)", "\(report.accepted)", "\(report.rejected)", "0", "\(report.hangs)",
                         String(format: "%.1f", Double(report.slowestMicroseconds) / 1000), kb(report.residentKilobytesAfter - report.residentKilobytesBefore),
                         String(format: "%.1f", report.seconds), String(format: "%.1f", baseline)])
        }

        if only.map({ word in "mesh".contains(word) || WireFuzzer.decoderNames.contains { $0.contains(word) } }) ?? true {
            let fuzzer = try WireFuzzer(seed: seed)
            let before = MutationFuzzer.residentKilobytes()
            let started = DispatchTime.now().uptimeNanoseconds
            var generated = 0
            var slowestChunk = 0.0
            // WireFuzzer picks a decoder family per input; run chunks until every decoder has had `inputs`.
            while WireFuzzer.decoderNames.contains(where: { (fuzzer.tallies[$0]?.inputs ?? 0) < inputs }) {
                let chunk = 100_000
                let t0 = DispatchTime.now().uptimeNanoseconds
                totalFindings = fuzzer.run(iterations: chunk)
                slowestChunk = max(slowestChunk, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9)
                generated += chunk
                let least = WireFuzzer.decoderNames.map { fuzzer.tallies[$0]?.inputs ?? 0 }.min() ?? 0
                FileHandle.standardError.write(Data("fuzz mesh: \(generated) inputs generated, least-fed decoder \(least)\n".utf8))
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let growth = MutationFuzzer.residentKilobytes() - before
            let b0 = DispatchTime.now().uptimeNanoseconds
            _ = try WireFuzzer(seed: seed).generateOnly(iterations: generated)
            let baseline = Double(DispatchTime.now().uptimeNanoseconds - b0) / 1e9
            for name in WireFuzzer.decoderNames {
                let tally = fuzzer.tallies[name] ?? WireFuzzer.Tally()
                rows.append(["mesh " + name, "\(tally.inputs)", "\(tally.accepted)", "\(tally.rejected)", "\(tally.findings)", "-", "-", "-", "-", "-"])
            }
            rows.append(["mesh (all, \(generated) inputs)", "", "", "", "\(totalFindings)", "0", String(format: "≤%.0f (chunk)", slowestChunk * 1000),
                         kb(growth), String(format: "%.1f", seconds), String(format: "%.1f", baseline)])
        }

        let header = ["decoder", "inputs", "accepted", "rejected", "findings", "hangs", "slowest ms", "RSS growth", "seconds", "baseline s"]
        let widths = header.indices.map { c in ([header] + rows).map { $0[c].count }.max() ?? 0 }
        for row in [header] + rows {
            print(row.enumerated().map { c, cell in c == 0 ? cell.padding(toLength: widths[c], withPad: " ", startingAt: 0)
                                                           : String(repeating: " ", count: widths[c] - cell.count) + cell }.joined(separator: "  "))
        }
        print("crashes: 0 (a crash ends this process); hangs: inputs over 1 s (a decode over 10 s ends the run and prints the input)")
        print("baseline s: generating the same inputs without decoding them; findings (mesh): a foreign error type or a failed round trip")
        if totalHangs > 0 || totalFindings > 0 { throw BenchFailure("\(totalHangs) hang(s), \(totalFindings) finding(s)") }
    }
}
