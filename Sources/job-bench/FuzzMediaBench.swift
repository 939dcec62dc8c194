import Cryptography
import Foundation
import MeshMedia

/// `fuzz-media`: a seeded mutation loop over every MeshMedia decoder (bit flips, truncations, insertions,
/// length-field edits, splices of the reference vectors and encoder-built frames).
///
/// Prints the inputs per decoder, accepted/rejected, findings (errors of a foreign type or round-trip
/// mismatches) and the elapsed time, next to the baseline of generating the same inputs without decoding.
/// A crash ends the process; rerun with `--dump INDEX` and the same `--seed` to print the input that caused it.
enum FuzzMediaBench {
    static func run(_ arguments: ArraySlice<String>) throws {
        var iterations = 1_000_000
        var seed: UInt64 = 0x6d657368
        var dump: Int?
        var rest = arguments
        while let option = rest.popFirst() {
            switch option {
            case "--inputs":
                iterations = try BenchOption.integer(&rest, "--inputs", in: 1...100_000_000)
            case "--seed":
                seed = try BenchOption.seed(&rest)
            case "--dump":
                guard let value = rest.popFirst(), let n = Int(value), n >= 0 else { throw BenchUsageError(message: "--dump needs an input index") }
                dump = n
            case "--help", "-h":
                print("usage: job-bench fuzz-media [--inputs N] [--seed S] [--dump INDEX]")
                print("  --inputs N     mutated inputs to decode (default 1000000)")
                print("  --seed S       PRNG seed (default \(0x6d657368)); the run is deterministic in it")
                print("  --dump INDEX   print input INDEX of the run as hex and exit (to reproduce a crash)")
                return
            default:
                throw BenchUsageError(message: "unknown option \(option)")
            }
        }
        if let dump {
            print(Hex.encode(try WireFuzzer.input(seed: seed, at: dump)))
            return
        }

        let baselineStart = DispatchTime.now().uptimeNanoseconds
        _ = try WireFuzzer(seed: seed).generateOnly(iterations: iterations)
        let baselineSeconds = Double(DispatchTime.now().uptimeNanoseconds - baselineStart) / 1e9

        let fuzzer = try WireFuzzer(seed: seed)
        let start = DispatchTime.now().uptimeNanoseconds
        let findings = fuzzer.run(iterations: iterations) { done in
            FileHandle.standardError.write(Data("fuzz-media: \(done) inputs\n".utf8))
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9

        print("fuzz-media: \(iterations) inputs, seed \(seed)")
        print("decoder".padding(toLength: 26, withPad: " ", startingAt: 0) + "   inputs  accepted  rejected  findings")
        for name in WireFuzzer.decoderNames {
            let tally = fuzzer.tallies[name] ?? WireFuzzer.Tally()
            print(name.padding(toLength: 26, withPad: " ", startingAt: 0)
                  + String(format: "%9d %9d %9d %9d", tally.inputs, tally.accepted, tally.rejected, tally.findings))
        }
        let decoded = fuzzer.tallies.values.reduce(0) { $0 + $1.inputs }
        print("decoder calls: \(decoded)")
        print("crashes: 0")
        print("findings: \(findings)")
        print(String(format: "elapsed: %.2f s (%.0f inputs/s); baseline, generating the same inputs without decoding: %.2f s",
                     seconds, Double(iterations) / max(seconds, 1e-9), baselineSeconds))
        if findings > 0 { throw BenchUsageError(message: "\(findings) finding(s): a decoder threw a foreign error or did not round-trip") }
    }
}
