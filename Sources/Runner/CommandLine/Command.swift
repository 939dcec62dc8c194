/// An administrative command that feeds or inspects a module's tables (`job grants issue`, `job pool show`).
///
/// Commands run outside the lease and the ledger; they print their own output (human or `--json`) through the
/// context and report failures by throwing `JobError`.
package protocol Command: Sendable {
    /// The words that name it after `job` (`["grants", "issue"]`).
    var path: [String] { get }
    /// One line for help.
    var summary: String { get }
    var options: [OptionSpec] { get }
    var positionals: [PositionalSpec] { get }
    /// Longer help shown by `job help <command>`.
    var discussion: String { get }
    /// Environment variables the command reads, for help, the reference and the env example (`NAME`, what it is).
    var environmentKeys: [(name: String, help: String)] { get }
    /// True for the relay role's commands, which also run on a PostgreSQL store; every other command needs SQLite.
    var runsOnPostgreSQL: Bool { get }
    /// The lazily loaded system libraries the command uses; loaded before the store is opened.
    var libraries: [LazyLibrary] { get }
    /// Runs the command.
    func run(_ context: JobContext) throws
}

extension Command {
    package var options: [OptionSpec] { [] }
    package var positionals: [PositionalSpec] { [] }
    package var discussion: String { "" }
    package var environmentKeys: [(name: String, help: String)] { [] }
    package var runsOnPostgreSQL: Bool { false }
    package var libraries: [LazyLibrary] { [] }
    /// The command's name as typed (`grants issue`).
    package var displayName: String { path.joined(separator: " ") }
}
