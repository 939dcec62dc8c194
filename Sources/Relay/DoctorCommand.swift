import Runner

/// `job doctor`: preflight checks as a report, one line each, and a non-zero exit when any failed.
///
/// The checks are a plain list (`DoctorCheck`s run in order over one `DoctorSession`), so other checks
/// (for example the store's) are added by appending to the list the module registers, without touching
/// these. A check may read what earlier checks found through the session, and skips when they failed.
struct DoctorCommand: Command {
    let path = ["doctor"]
    let summary = "preflight report: Syncthing config, API and key, device id, relay health, a peer, a shared folder"
    let options: [OptionSpec] = [.flag("--send-trigger", "also send one real wake-up trigger to the relay")]
    let discussion = "Sends nothing to the relay except GET /api/v1/health unless --send-trigger is given. Reads RELAY_URL and the SYNCTHING_* variables like retrigger-stale."
    let checks: [DoctorCheck]

    func run(_ context: JobContext) throws {
        let session = DoctorSession(context: context)
        var rows: [(check: DoctorCheck, outcome: DoctorOutcome)] = []
        for check in checks {
            let outcome = check.run(session)
            rows.append((check, outcome))
            context.logger.info("doctor.check", ["check": .word(check.name), "status": .word(outcome.word)])
        }
        if context.jsonOutput {
            context.printJSON(["ok": .bool(!rows.contains { $0.outcome.isFailure }),
                               "checks": .array(rows.map { ["name": .string($0.check.name), "status": .string($0.outcome.word), "detail": .string($0.outcome.detail)] })])
        } else {
            for row in rows { context.print("\(row.outcome.word.padding(toLength: 5, withPad: " ", startingAt: 0)) \(row.check.name): \(row.outcome.detail)") }
        }
        let failures = rows.compactMap { row -> DoctorOutcome? in row.outcome.isFailure ? row.outcome : nil }
        if let first = failures.first, case .fail(_, let code) = first {
            throw JobError(code, category: "doctor-failed", "\(failures.count) of \(rows.count) checks failed")
        }
    }
}

/// What one check found. Details are fixed text and counts only — never an identifier, URL, path or key.
enum DoctorOutcome {
    case pass(String)
    /// Failed, with the exit code the failure stands for (78 configuration, 69 unavailable).
    case fail(String, ExitCode)
    case skip(String)

    var word: String {
        switch self {
        case .pass: return "ok"
        case .fail: return "FAIL"
        case .skip: return "skip"
        }
    }
    var detail: String {
        switch self {
        case .pass(let text), .fail(let text, _), .skip(let text): return text
        }
    }
    var isFailure: Bool { if case .fail = self { return true } else { return false } }

    static func fail(_ error: JobError) -> DoctorOutcome { .fail(error.message, error.exitCode) }
}

/// One named check of `job doctor`.
struct DoctorCheck: Sendable {
    /// A fixed, loggable name (`relay-health`).
    let name: String
    let run: @Sendable (DoctorSession) -> DoctorOutcome
}

/// State shared by the checks of one `job doctor` run.
final class DoctorSession: @unchecked Sendable {
    let context: JobContext
    var syncthing: SyncthingClient?
    var relayURL: String?
    var myID: String?
    var keyAccepted = false
    init(context: JobContext) { self.context = context }
}
