/// One named check of `job doctor`.
public struct DoctorCheck: Sendable {
    /// A fixed, loggable name, unique across modules (`store-integrity`, `relay-health`).
    public let name: String
    public let run: @Sendable (DoctorSession) -> DoctorOutcome

    /// `name` is a literal: it goes to the log as a fixed word.
    public init(name: StaticString, run: @escaping @Sendable (DoctorSession) -> DoctorOutcome) {
        self.name = "\(name)"
        self.run = run
    }
}

/// A module's checks for one job or concern, run only where it is configured.
public struct DoctorGroup: Sendable {
    /// The job or concern checked (`store`, `retrigger-stale`).
    public let name: String
    /// Options the group reads (`--send-trigger`); `job doctor` accepts the union.
    public let options: [OptionSpec]
    /// Nil when the group applies on this machine; otherwise why it is skipped ("RELAY_URL is not set").
    public let notConfigured: @Sendable (JobContext) -> String?
    public let checks: [DoctorCheck]

    public init(name: StaticString, options: [OptionSpec] = [], notConfigured: @escaping @Sendable (JobContext) -> String? = { _ in nil }, checks: [DoctorCheck]) {
        self.name = "\(name)"
        self.options = options
        self.notConfigured = notConfigured
        self.checks = checks
    }
}
