/// `job doctor`: every module's checks as a report, one line each, and a non-zero exit when any failed.
///
/// Groups run in module order; a group whose job is not configured on this machine is reported as skipped, and
/// one whose libraries cannot be loaded as one failed row.
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

    /// The first of `libraries` that cannot be loaded, as its exit-69 error.
    static func unloadable(_ libraries: [LazyLibrary]) -> JobError? {
        for library in libraries {
            do { try library.require() } catch { return error }
        }
        return nil
    }

    func run(_ context: JobContext) throws {
        let session = DoctorSession(context: context)
        var rows: [(group: String, name: String, outcome: DoctorOutcome)] = []
        for group in groups {
            if let reason = group.notConfigured(context) {
                rows.append((group.name, group.name, .skip("not configured here: \(reason)")))
                continue
            }
            // A library the checks need, missing, is one failed row (the loader's line names its package), and the
            // other groups still run: the stub would otherwise stop the whole report at the group's first call.
            if let missing = Self.unloadable(group.libraries) {
                rows.append((group.name, group.name, .fail(missing)))
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
        let failures = rows.filter { $0.outcome.isFailure }
        var failure: JobError?
        if let first = failures.first, case .fail(_, let code) = first.outcome {
            failure = JobError(code, category: "doctor-failed", "\(failures.count) of \(rows.count) checks failed")
        }
        if context.jsonOutput {
            // One JSON value whatever the outcome: a failure's error and exit code go into the report itself.
            var fields: [(String, JSON)] = [
                ("ok", .bool(failure == nil)),
                ("checks", .array(rows.map { ["group": .string($0.group), "name": .string($0.name), "status": .string($0.outcome.word), "detail": .string($0.outcome.detail)] })),
            ]
            if let failure {
                fields.append(("error", ["category": .string(failure.category), "message": .string(failure.message)]))
                fields.append(("exit_code", .number(failure.exitCode.rawValue)))
            }
            context.printJSON(.object(fields))
        } else {
            for row in rows { context.print("\(row.outcome.word.padding(toLength: 5, withPad: " ", startingAt: 0)) \(row.name): \(row.outcome.detail)") }
        }
        if let failure { throw context.jsonOutput ? failure.alreadyPrintedAsJSON() : failure }
    }
}
