/// One named check of `job doctor`.
package struct DoctorCheck: Sendable {
    /// A fixed, loggable name, unique across modules (`store-integrity`, `relay-health`).
    package let name: String
    package let run: @Sendable (DoctorSession) -> DoctorOutcome

    /// `name` is a literal: it goes to the log as a fixed word.
    package init(name: StaticString, run: @escaping @Sendable (DoctorSession) -> DoctorOutcome) {
        self.name = "\(name)"
        self.run = run
    }
}

/// A module's checks for one job or concern, run only where it is configured.
package struct DoctorGroup: Sendable {
    /// The job or concern checked (`store`, `retrigger-stale`).
    package let name: String
    /// Options the group reads (`--send-trigger`); `job doctor` accepts the union.
    package let options: [OptionSpec]
    /// Nil when the group applies on this machine; otherwise why it is skipped ("RELAY_URL is not set").
    package let notConfigured: @Sendable (JobContext) -> String?
    /// The lazily loaded libraries the checks call into; one that cannot be loaded fails the group in one row.
    package let libraries: [LazyLibrary]
    package let checks: [DoctorCheck]

    package init(name: StaticString, options: [OptionSpec] = [], notConfigured: @escaping @Sendable (JobContext) -> String? = { _ in nil },
                 libraries: [LazyLibrary] = [], checks: [DoctorCheck]) {
        self.name = "\(name)"
        self.options = options
        self.notConfigured = notConfigured
        self.libraries = libraries
        self.checks = checks
    }
}
