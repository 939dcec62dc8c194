/// A background job: a stable name and one bounded, idempotent pass over the store.
///
/// A pass does its work in batches of at most 1,000 rows per transaction, calls
/// `context.checkCancellation()` between batches, and returns named counts. The runner around it takes the
/// lease, records the ledger row, writes metrics and maps errors to exit codes; `run` only does the work.
package protocol Job: Sendable {
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
    /// Keys of the stored settings the job reads, for help and the reference (`prefetch.after-id`).
    var settingKeys: [String] { get }
    /// How long the lease lasts without renewal; a crashed pass blocks the next for at most this long.
    var leaseSeconds: Int { get }
    /// systemd credentials the unit loads besides `store-key` (`apns-key` → `LoadCredential=apns-key:/etc/background-jobs/apns-key`),
    /// read by the job from `$CREDENTIALS_DIRECTORY/<name>`.
    var credentials: [String] { get }
    /// True for the relay role's jobs, which also run on a PostgreSQL store; every other job needs SQLite.
    var runsOnPostgreSQL: Bool { get }
    /// True when passes of this job may run at once on a PostgreSQL store, each claiming its own share of the work
    /// (`send-wakeups` on several hosts): each pass then holds a lease of its own instead of the job's one lease.
    var passesShareWork: Bool { get }
    /// The lazily loaded system libraries a pass uses; the runner loads them before it opens the store.
    var libraries: [LazyLibrary] { get }
    /// True when the runner checks an SQLite store's pages (`PRAGMA quick_check`) before the pass writes anything,
    /// not even its lease or ledger row, and stops with 73 on damage (`maintain-store`, which rewrites pages).
    var checksStoreBeforeWriting: Bool { get }
    /// Does one pass.
    func run(_ context: JobContext) throws -> JobResult
}

extension Job {
    package var options: [OptionSpec] { [] }
    package var environmentKeys: [(name: String, help: String)] { [] }
    package var settingKeys: [String] { [] }
    package var leaseSeconds: Int { 600 }
    package var credentials: [String] { [] }
    package var runsOnPostgreSQL: Bool { false }
    package var passesShareWork: Bool { false }
    package var libraries: [LazyLibrary] { [] }
    package var checksStoreBeforeWriting: Bool { false }
}
