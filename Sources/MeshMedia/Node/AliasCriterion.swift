/// The release criterion for removing the 0x09 receive alias, as a pure function.
///
/// The alias may be removed only when every recorded build that emitted 0x09 has expired **and** the
/// minimum-supported-client policy for its platform excludes it (its version is below the minimum). With no
/// emitting build recorded the criterion is untracked, and the verdict stays `alias-required`: removal needs
/// evidence, not the absence of it.
enum AliasCriterion {
    struct Build: Equatable {
        var platform: String
        var version: String
        var channel: String
        var emittedAlias: Bool
        /// Unix ms; nil = no expiry known (never counts as expired).
        var expiresAt: Int64?
    }

    enum Hold: String, Equatable {
        case notExpired = "not-expired"
        case policyAllows = "policy-allows"
    }

    struct Verdict: Equatable {
        var removable: Bool
        /// Builds that keep the alias, with every reason each one holds it.
        var holding: [(build: Build, reasons: [Hold])]
        /// True when no emitting build is recorded.
        var untracked: Bool

        static func == (a: Verdict, b: Verdict) -> Bool {
            a.removable == b.removable && a.untracked == b.untracked
                && a.holding.map(\.build) == b.holding.map(\.build) && a.holding.map(\.reasons) == b.holding.map(\.reasons)
        }

        var word: String { removable ? "alias-removable" : "alias-required" }
    }

    /// `policy`: platform → minimum supported version.
    static func evaluate(builds: [Build], policy: [String: String], now: Int64) -> Verdict {
        let emitting = builds.filter(\.emittedAlias)
        var holding: [(Build, [Hold])] = []
        for build in emitting {
            var reasons: [Hold] = []
            if !(build.expiresAt.map { $0 <= now } ?? false) { reasons.append(.notExpired) }
            let excluded = policy[build.platform].map { minimum in Version.compare(build.version, minimum).map { $0 < 0 } ?? false } ?? false
            if !excluded { reasons.append(.policyAllows) }
            if !reasons.isEmpty { holding.append((build, reasons)) }
        }
        let untracked = emitting.isEmpty
        return Verdict(removable: !untracked && holding.isEmpty, holding: holding.map { (build: $0.0, reasons: $0.1) }, untracked: untracked)
    }
}

/// Dotted numeric versions (`1.4`, `1.4.2`, up to four parts), compared part by part with missing parts as 0.
enum Version {
    static func parse(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 9, part.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(part) else { return nil }
            numbers.append(n)
        }
        return numbers
    }

    /// -1, 0 or 1; nil when either is not a version.
    static func compare(_ a: String, _ b: String) -> Int? {
        guard let x = parse(a), let y = parse(b) else { return nil }
        for i in 0..<max(x.count, y.count) {
            let l = i < x.count ? x[i] : 0, r = i < y.count ? y[i] : 0
            if l != r { return l < r ? -1 : 1 }
        }
        return 0
    }
}
