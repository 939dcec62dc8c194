/// `job doctor`: every module's checks as a report, one line each, and a non-zero exit when any failed.
///
/// Groups run in module order; a group whose job is not configured on this machine is reported as skipped.
/// The exit code is the first failure's (73 store, 78 configuration, 69 unavailable).
struct DoctorCommand: Command {
    let runsOnPostgreSQL = true
    let path = ["doctor"]
    let summary = "check the store, the key, the metrics folder and each configured job, and say what to fix"
    let groups: [DoctorGroup]
    var options: [OptionSpec] { groups.flatMap(\.options) }
    var discussion: String {
        "Groups: " + groups.map(\.name).joined(separator: ", ") + ". A group whose job is not configured here is skipped."
    }

    func run(_ context: JobContext) throws {
        let session = DoctorSession(context: context)
        var rows: [(group: String, name: String, outcome: DoctorOutcome)] = []
        for group in groups {
            if let reason = group.notConfigured(context) {
                rows.append((group.name, group.name, .skip("not configured here: \(reason)")))
                continue
            }
            for check in group.checks {
                rows.append((group.name, check.name, check.run(session)))
            }
        }
        for row in rows {
            // A failed check is an error in the journal, not an info line among the passes.
            context.logger.log(row.outcome.isFailure ? .error : .info, "doctor.check",
                               ["check": .word(FixedWord(trusted: row.name)), "status": .word(FixedWord(trusted: row.outcome.word))])
        }
        if context.jsonOutput {
            context.printJSON(["ok": .bool(!rows.contains { $0.outcome.isFailure }),
                               "checks": .array(rows.map { ["group": .string($0.group), "name": .string($0.name), "status": .string($0.outcome.word), "detail": .string($0.outcome.detail)] })])
        } else {
            for row in rows { context.print("\(row.outcome.word.padding(toLength: 5, withPad: " ", startingAt: 0)) \(row.name): \(row.outcome.detail)") }
        }
        let failures = rows.filter { $0.outcome.isFailure }
        if let first = failures.first, case .fail(_, let code) = first.outcome {
            throw JobError(code, category: "doctor-failed", "\(failures.count) of \(rows.count) checks failed")
        }
    }
}
