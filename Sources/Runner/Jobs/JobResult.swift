/// What one pass of a job did: its outcome and named counts (docs/design.md §3).
package struct JobResult: Sendable {
    /// How a pass ended.
    package enum Outcome: String, Sendable, LogWord, CaseIterable {
        case completed, skipped, failed
    }

    package var outcome: Outcome
    package var counts: Counts
    /// For `skipped`: a fixed reason word (`lease-held`, `disabled`, `no-credential`, `cadence`, …). Set only from a
    /// literal (`skipped(_:)`), since `pass.skipped` logs it.
    public private(set) var reason: String?
    /// Extra facts for the human summary and `--json` `details` (no identifiers or secrets).
    package var details: [(String, JSON)]

    package init(outcome: Outcome = .completed, counts: Counts = Counts(), details: [(String, JSON)] = []) {
        self.init(outcome: outcome, counts: counts, reason: nil, details: details)
    }

    private init(outcome: Outcome, counts: Counts, reason: String?, details: [(String, JSON)]) {
        self.outcome = outcome
        self.counts = counts
        self.reason = reason
        self.details = details
    }

    /// A completed pass with these counts.
    package static func completed(_ counts: Counts, details: [(String, JSON)] = []) -> JobResult {
        JobResult(outcome: .completed, counts: counts, details: details)
    }

    /// A pass that decided to do nothing, for a fixed reason.
    package static func skipped(_ reason: StaticString, counts: Counts = Counts(), details: [(String, JSON)] = []) -> JobResult {
        JobResult(outcome: .skipped, counts: counts, reason: "\(reason)", details: details)
    }
}
