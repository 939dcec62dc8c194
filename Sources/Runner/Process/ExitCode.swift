/// The process exit status of a `job` invocation (sysexits, docs/design.md §3). Scripts rely on these values.
package enum ExitCode: Int32, Sendable, CaseIterable {
    /// Done; also a pass skipped because another holds the lease, or a disabled job.
    case success = 0
    /// The command line was wrong (EX_USAGE).
    case usage = 64
    /// Input data was malformed or refused (EX_DATAERR).
    case dataError = 65
    /// A required service is unavailable (EX_UNAVAILABLE).
    case unavailable = 69
    /// An internal error: a bug (EX_SOFTWARE).
    case software = 70
    /// The store cannot be created or opened (EX_CANTCREAT).
    case cannotCreate = 73
    /// A transient failure: retry next pass (EX_TEMPFAIL); also a pass stopped by SIGTERM/SIGINT.
    case temporaryFailure = 75
    /// The configuration is wrong (EX_CONFIG).
    case configuration = 78
}
