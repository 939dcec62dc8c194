import Testing

/// What a suite starts beyond its own process, so that a run can leave the slow part out.
///
/// `scripts/test --fast` runs only the suites with none of these tags. Every suite also carries a time limit
/// (`.timeLimit(.minutes(15))`), so that a hung peer fails its test instead of stalling the run. Swift Testing
/// counts a test's limit from when it starts the test, and in a single `swift test` process that includes the
/// wait for a thread of the cooperative pool — on a 2-core machine nearly the whole suite's time — so the limit
/// stays well above what the whole suite takes in one process (about 7 minutes there).
extension Tag {
    /// The suite starts a child process: the built `job`, a stand-in server or a tool such as openssl.
    @Tag package static var process: Self
    /// The suite starts a PostgreSQL cluster (or runs on the shared one of its process).
    @Tag package static var postgres: Self
    /// The suite starts real iroh nodes in a loopback-only network namespace.
    @Tag package static var iroh: Self
    /// The suite starts nginx.
    @Tag package static var nginx: Self
    /// The suite starts a real Syncthing.
    @Tag package static var syncthing: Self
}
