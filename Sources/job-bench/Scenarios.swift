/// Every benchmark scenario by name; each takes its own options (the arguments after the name).
/// Add a scenario by writing `<Name>Bench.swift` with a `run(_:)` and listing it here.
let scenarios: [String: @Sendable (ArraySlice<String>) throws -> Void] = [
    "crypto": CryptoBench.run,
    "fuzz-media": FuzzMediaBench.run,
    "mesh-crowd": MeshCrowdBench.run,
    "mint-pool": MintPoolBench.run,
    "startup": StartupBench.run,
    "send-wakeups": SendWakeupsBench.run,
    "relay-scale": RelayScaleBench.run,
    "clean-tokens": CleanTokensBench.run,
    "chaos": ChaosBench.run,
    "fuzz": FuzzBench.run,
    "fuzz-argv": FuzzArgvBench.run,
    "contention": ContentionBench.run,
    "sweep-grants": SweepGrantsBench.run,
    "link": LinkBench.run,
    "link-flood": LinkFloodBench.run,
    "relay-api": RelayAPIBench.run,
    "watch": WatchBench.run,
]

/// A bad option or value for a scenario; `main` reports it and exits 64 (usage).
struct BenchUsageError: Error {
    let message: String
}

/// Reads the value after a scenario option, with the checks every scenario wants.
enum BenchOption {
    /// A whole number in `range` following `option`.
    static func integer(_ rest: inout ArraySlice<String>, _ option: String, in range: ClosedRange<Int>) throws -> Int {
        guard let value = rest.popFirst(), let n = Int(value), range.contains(n) else {
            throw BenchUsageError(message: "\(option) needs a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    /// A PRNG seed following `--seed`.
    static func seed(_ rest: inout ArraySlice<String>) throws -> UInt64 {
        guard let value = rest.popFirst(), let n = UInt64(value) else { throw BenchUsageError(message: "--seed needs a whole number") }
        return n
    }
}
