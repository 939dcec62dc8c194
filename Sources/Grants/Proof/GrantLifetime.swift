import Runner

/// A grant's idle lifetime (docs/protocols/grants-and-link.md §3.5): 30, 90 or 365 days, or never; fixed at issue time, kept on renewal.
package enum GrantLifetime: String, Sendable, CaseIterable {
    case days30 = "30d", days90 = "90d", days365 = "365d", never

    /// The default idle lifetime.
    package static let `default` = GrantLifetime.days90

    /// The lifetime in milliseconds; nil for `never`.
    package var milliseconds: Int64? {
        switch self {
        case .days30: return 30 * 86_400_000
        case .days90: return 90 * 86_400_000
        case .days365: return 365 * 86_400_000
        case .never: return nil
        }
    }

    /// Parses `30d|90d|365d|never` (a usage error otherwise).
    package static func parse(_ text: String) throws -> GrantLifetime {
        guard let value = GrantLifetime(rawValue: text) else { throw JobError.usage("--lifetime must be one of 30d, 90d, 365d, never") }
        return value
    }

    /// The idle deadline of a grant with lifetime `lifetimeMs` last used at `now`; nil when it never expires.
    package static func deadline(lifetimeMs: Int64?, from now: Int64) -> Int64? {
        lifetimeMs.map { now + $0 }
    }
}
