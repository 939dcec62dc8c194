/// A background job: a stable name and one bounded, idempotent pass over the store.
///
/// A pass does its work in batches of at most 1,000 rows per transaction, calls
/// `context.checkCancellation()` between batches, and returns named counts. The runner around it takes the
/// lease, records the ledger row, writes metrics and maps errors to exit codes; `run` only does the work.
public protocol Job: Sendable {
    /// The **fixed** name users' timers and scripts call (`sweep-grants`).
    var name: String { get }
    /// One line for `job list` and help.
    var summary: String { get }
    /// The default timer schedule, used for the systemd units and the crontab example.
    var schedule: Schedule { get }
    /// Options beyond the ones every job has (`--dry-run`).
    var options: [OptionSpec] { get }
    /// Environment variables the job reads, for help and the env example (`NAME`, what it is).
    var environmentKeys: [(name: String, help: String)] { get }
    /// How long the lease lasts without renewal; a crashed pass blocks the next for at most this long.
    var leaseSeconds: Int { get }
    /// systemd credentials the unit loads besides `store-key` (`apns-key` → `LoadCredential=apns-key:/etc/background-jobs/apns-key`),
    /// read by the job from `$CREDENTIALS_DIRECTORY/<name>`.
    var credentials: [String] { get }
    /// The lazily loaded system libraries a pass uses; the runner loads them before it opens the store.
    var libraries: [LazyLibrary] { get }
    /// Does one pass.
    func run(_ context: JobContext) throws -> JobResult
}

extension Job {
    public var options: [OptionSpec] { [] }
    public var environmentKeys: [(name: String, help: String)] { [] }
    public var leaseSeconds: Int { 600 }
    public var credentials: [String] { [] }
    public var libraries: [LazyLibrary] { [] }
}
