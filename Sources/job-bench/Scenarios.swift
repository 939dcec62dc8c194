/// Every benchmark scenario by name; each takes its own options (the arguments after the name).
/// Add a scenario by writing `<Name>Bench.swift` with a `run(_:)` and listing it here.
let scenarios: [String: (ArraySlice<String>) throws -> Void] = [
    "crypto": CryptoBench.run,
    "fuzz-media": FuzzMediaBench.run,
    "mint-pool": MintPoolBench.run,
    "startup": StartupBench.run,
    "send-wakeups": SendWakeupsBench.run,
    "clean-tokens": CleanTokensBench.run,
    "chaos": ChaosBench.run,
    "fuzz": FuzzBench.run,
    "contention": ContentionBench.run,
    "sweep-grants": SweepGrantsBench.run,
]

/// A bad option or value for a scenario; `main` reports it and exits 64 (usage).
struct BenchUsageError: Error {
    let message: String
}
