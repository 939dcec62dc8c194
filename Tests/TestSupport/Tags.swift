import Testing

/// What a suite starts beyond its own process, so that a run can leave the slow part out.
///
/// `scripts/test --fast` runs only the suites with none of these tags; every suite also carries a time limit
/// (`.timeLimit`), ten minutes for a tagged suite's tests and five for the rest, so that a hung peer fails its
/// test instead of the whole run.
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
