import Runner

/// The settings this module reads (`job settings get|set KEY VALUE`).
enum GrantsSettings {
    static let pullEnabled = "pull-offers.enabled"
    static let lifetime = "grants.lifetime"
    static let grantRetentionDays = "grants.retention-days"
    static let offerRetentionDays = "offers.retention-days"
    static let maxContacts = "limits.max-contacts"
    static let maxPendingOffers = "limits.max-pending-offers"
    static let offersPerHour = "limits.offers-per-hour"
    static let declineCooldownAfter = "limits.decline-cooldown-after"
    static let declineCooldownMinutes = "limits.decline-cooldown-minutes"
    static let connectTimeout = "link.connect-timeout-seconds"
    static let handshakeTimeout = "link.handshake-timeout-seconds"
    static let messageTimeout = "link.message-timeout-seconds"
    static let connectionTimeout = "link.connection-timeout-seconds"
    static let maxConnections = "link.max-connections"
    static let maxConnectionsPerAddress = "link.max-connections-per-address"
    static let idleExit = "link.idle-exit-seconds"
    static let validateAbove = "link.validate-addresses-above"
    static let pullContactTimeout = "pull-offers.contact-timeout-seconds"
    static let pullPassBudget = "pull-offers.pass-budget-seconds"
    static let pullParallelDials = "pull-offers.parallel-dials"
    static let advertiseAddress = "link.advertise-address"

    static let all: [SettingSpec] = [
        .toggle(pullEnabled, default: false,
                "collect offers held for this node on each pull-offers pass; dialing contacts tells them when this node runs and where it is"),
        .choice(lifetime, default: GrantLifetime.default.rawValue, GrantLifetime.allCases.map(\.rawValue),
                "idle lifetime of newly issued grants (renewed on each use)"),
        .integer(grantRetentionDays, default: 30, in: 1...3650, "days a revoked or lapsed grant tombstone is kept before sweep-grants purges it"),
        .integer(offerRetentionDays, default: 30, in: 1...3650, "days a finished offer row is kept before sweep-grants purges it"),
        .integer(maxContacts, default: 1000, in: 1...100_000, "most contacts this node remembers"),
        .integer(maxPendingOffers, default: 50, in: 1...10_000, "most incoming offers waiting for a decision"),
        .integer(offersPerHour, default: 10, in: 1...1000, "most offers accepted from one contact per hour"),
        .integer(declineCooldownAfter, default: 3, in: 1...100, "consecutive declines from this node that start a cooldown for that contact"),
        .integer(declineCooldownMinutes, default: 60, in: 1...100_000, "minutes a contact's offers are refused after repeated declines"),
        .integer(connectTimeout, default: 5, in: 1...60, "seconds to wait when dialing a contact before giving up"),
        .integer(handshakeTimeout, default: 10, in: 1...60, "seconds serve-link gives a connection to complete its QUIC/TLS handshake"),
        .integer(messageTimeout, default: 10, in: 1...300, "seconds one link message may take to arrive or leave, on either side"),
        .integer(connectionTimeout, default: 30, in: 1...3600, "seconds one link connection may last in all, on either side"),
        .integer(maxConnections, default: 256, in: 1...4096, "connections serve-link answers at once; packets starting more are dropped"),
        .integer(maxConnectionsPerAddress, default: 8, in: 1...4096,
                 "connections serve-link answers at once from one IPv4 address or IPv6 /64; packets starting more are dropped"),
        .integer(validateAbove, default: 8, in: 0...4096,
                 "unproven half-open handshakes (holding no slot) above which serve-link answers new ones with a QUIC Retry first (0: always)"),
        .integer(idleExit, default: 300, in: 1...86_400, "seconds serve-link started by systemd keeps serving with no connection open before it exits"),
        .integer(pullContactTimeout, default: 30, in: 1...600, "seconds one contact may take in a pull-offers pass before it is skipped for time"),
        .integer(pullPassBudget, default: 120, in: 1...240, "seconds one pull-offers pass may take; contacts left are skipped for time"),
        .integer(pullParallelDials, default: 4, in: 1...32, "contacts one pull-offers pass dials at once"),
        SettingSpec(key: advertiseAddress, defaultValue: "",
                    summary: "HOST:PORT where this node's serve-link listens, told to contacts on each connection so their cached address follows it (empty: not told)",
                    validate: { value in value.isEmpty || (try? LinkAddress.parseLink(value)) != nil ? nil : "must be HOST:PORT or [IPv6]:PORT" }),
    ]

    /// The receiver's offer limits as currently set; live and pulled offers are held to the same ones.
    static func offerLimits(_ settings: Settings) throws -> OfferLimits {
        OfferLimits(maxPending: try settings.int(maxPendingOffers), perHour: try settings.int(offersPerHour),
                    cooldownAfter: try settings.int(declineCooldownAfter),
                    cooldownMilliseconds: Int64(try settings.int(declineCooldownMinutes)) * 60_000)
    }
}
