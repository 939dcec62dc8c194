/// A failure a command or job reports to the user: a one-line message, a fixed category and an exit code.
///
/// The message is shown on stderr and in `--json` output; the category is a fixed word that goes to logs,
/// the ledger and metrics. Neither may carry an identifier or a secret (docs/design.md §5): say "the contact", not
/// the contact's endpoint id.
package struct JobError: Error, CustomStringConvertible, Sendable {
    package let exitCode: ExitCode
    /// A fixed, loggable word (`usage`, `store-unavailable`, `relay-not-found`, …).
    package let category: String
    /// What happened and what to do, in one line, free of identifiers and secrets.
    package let message: String

    package init(_ exitCode: ExitCode, category: StaticString, _ message: String) {
        self.exitCode = exitCode
        self.category = "\(category)"
        self.message = message
    }

    /// True when the command has already printed its one `--json` value, which carries this failure: the
    /// command line then adds none of its own (`--json` output is always exactly one value).
    public private(set) var printedAsJSON = false

    package var description: String { message }

    /// This failure, marked as already printed in the command's own `--json` value.
    package func alreadyPrintedAsJSON() -> JobError {
        var copy = self
        copy.printedAsJSON = true
        return copy
    }

    /// The command line was wrong (64).
    package static func usage(_ message: String) -> JobError { JobError(.usage, category: "usage", message) }
    /// Input data was malformed or refused (65).
    package static func badInput(_ category: StaticString, _ message: String) -> JobError { JobError(.dataError, category: category, message) }
    /// A required service is unavailable (69).
    package static func unavailable(_ category: StaticString, _ message: String) -> JobError { JobError(.unavailable, category: category, message) }
    /// The configuration is wrong (78).
    package static func configuration(_ category: StaticString, _ message: String) -> JobError { JobError(.configuration, category: category, message) }
    /// A transient failure; the next pass retries (75).
    package static func transient(_ category: StaticString, _ message: String) -> JobError { JobError(.temporaryFailure, category: category, message) }
    /// The store cannot be created or opened (73).
    package static func store(_ category: StaticString, _ message: String) -> JobError { JobError(.cannotCreate, category: category, message) }
    /// A bug (70).
    package static func `internal`(_ message: String) -> JobError { JobError(.software, category: "internal", message) }
    /// The pass was asked to stop by SIGTERM or SIGINT (75).
    package static let cancelled = JobError(.temporaryFailure, category: "cancelled", "stopped by a signal between batches; committed batches stay and the next pass continues")
}
