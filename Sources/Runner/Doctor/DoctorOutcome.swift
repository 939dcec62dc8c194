/// What one `job doctor` check found. Details are fixed text and counts only — never an identifier, URL, path or key.
package enum DoctorOutcome: Sendable {
    case pass(String)
    /// Failed, with the exit code the failure stands for (78 configuration, 69 unavailable, 73 store).
    case fail(String, ExitCode)
    case skip(String)
    /// Works, but not as well as it could; the detail says the fix. Not a failure (the exit code stays 0).
    case warn(String)

    /// The status word printed and logged.
    package var word: String {
        switch self {
        case .pass: return "ok"
        case .fail: return "FAIL"
        case .skip: return "skip"
        case .warn: return "WARN"
        }
    }

    package var detail: String {
        switch self {
        case .pass(let text), .fail(let text, _), .skip(let text), .warn(let text): return text
        }
    }

    package var isFailure: Bool { if case .fail = self { return true } else { return false } }

    /// A failure carrying a `JobError`'s message and exit code.
    package static func fail(_ error: JobError) -> DoctorOutcome { .fail(error.message, error.exitCode) }
}
