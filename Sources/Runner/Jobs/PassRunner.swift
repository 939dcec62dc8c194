import CShims
import Elapsed
import Foundation
import Store

/// Runs one pass of a job around its `run`: lease, ledger, signals, metrics, output and exit code.
package struct PassRunner {
    package let catalog: Catalog
    package let invocation: Invocation

    package init(catalog: Catalog, invocation: Invocation) {
        self.catalog = catalog
        self.invocation = invocation
    }

    /// What happened, for callers that want more than the exit code (tests).
    package struct Report {
        package let result: JobResult
        package let exitCode: ExitCode
        package let error: JobError?
        package let startedAt: Date
        package let durationMilliseconds: Int
    }

    /// Runs one pass of `job` with `tokens` (the words after the job name) and returns its exit code.
    @discardableResult
    package func run(_ job: any Job, tokens: [String]) -> ExitCode {
        let logger = invocation.logger(for: job.name)
        do {
            let options = job.options + [OptionSpec.flag("--dry-run", "report what the pass would do, change nothing")]
            let arguments = try Arguments(parsing: tokens, options: options, positionals: [], commandName: job.name)
            for library in job.libraries { try library.require() }
            let database = try invocation.openStore(catalog)
            return pass(job, database: database, arguments: arguments, logger: logger).exitCode
        } catch {
            let failure = StoreFailure.jobError(for: error)
            logger.error("pass.failed", ["category": .category(failure), "exit_code": .int(failure.exitCode.rawValue)])
            emit(job: job.name, result: JobResult(outcome: .failed), error: failure, exitCode: failure.exitCode, startedAt: Date(), durationMilliseconds: 0, dryRun: false)
            return failure.exitCode
        }
    }

    /// The pass itself over an open store: the store check, the lease and the ledger row, the job's run, the end
    /// recorded, then the log line and the printed result.
    package func pass(_ job: any Job, database: Database, arguments: Arguments, logger: Logger) -> Report {
        let dryRun = arguments.flag("--dry-run")
        let context = invocation.context(name: job.name, database: database, arguments: arguments, dryRun: dryRun, catalog: catalog)
        let start = Start(clock: context.monotonic)

        shim_install_termination_handlers()
        logger.info("pass.started", ["dry_run": .bool(dryRun)])

        if job.checksStoreBeforeWriting, database.engine == .sqlite, let failed = checkStore(job, database: database, logger: logger, start: start, dryRun: dryRun) {
            return failed
        }
        // Dry runs change nothing: no lease, no ledger row, no metrics.
        var held: Held?
        if !dryRun {
            switch takeLease(job, database: database, logger: logger, start: start) {
            case .held(let taken):
                held = taken
                renewLease(taken, context: context)
            case .finished(let report):
                return report
            }
        }
        context.progressReporter = ProgressReporter.forTerminal(json: invocation.jsonOutput, environment: invocation.environment, clock: context.monotonic)
        let (result, failure) = runJob(job, context: context)
        context.progressReporter?.finish()
        let exitCode = failure?.exitCode ?? .success
        let duration = start.elapsedMilliseconds()

        // A damaged file is left exactly as found: no ledger or lease writes, no checkpoint on close. The lease
        // this pass took then belongs to a dead process and is taken over by the next pass.
        let storeDamaged = failure?.category == "store-corrupt" || failure?.category == "store-not-a-database"
        if storeDamaged { database.leaveMainFileUntouchedOnClose() }
        if let held, !storeDamaged {
            recordEnd(job, held: held, database: database, result: result, failure: failure, exitCode: exitCode, duration: duration, logger: logger)
            finishMetrics(job: job.name, outcome: result.outcome, database: database, start: start, exitCode: exitCode, counts: result.counts, logger: logger)
        }

        if let failure {
            logger.error("pass.failed", ["category": .category(failure), "exit_code": .int(failure.exitCode.rawValue), "duration_ms": .int(duration)])
        } else if result.outcome == .skipped {
            logger.log(.info, "pass.skipped", ["reason": .reason(result), "duration_ms": .int(duration)], counts: result.counts)
        } else {
            logger.log(.info, "pass.completed", ["duration_ms": .int(duration)], counts: result.counts)
        }
        emit(job: job.name, result: result, error: failure, exitCode: exitCode, startedAt: start.at, durationMilliseconds: duration, dryRun: dryRun)
        return Report(result: result, exitCode: exitCode, error: failure, startedAt: start.at, durationMilliseconds: duration)
    }

    /// When a pass started: the wall instant it shows (`started_at`) and the monotonic instant its duration counts from.
    struct Start {
        let at = Date()
        let clock: MonotonicClock
        let instant: MonotonicInstant

        init(clock: MonotonicClock) {
            self.clock = clock
            self.instant = clock.now()
        }

        func elapsedSeconds() -> Double { clock.seconds(since: instant) }
        func elapsedMilliseconds() -> Int { Int((elapsedSeconds() * 1000).rounded()) }
    }

    /// The lease a pass holds and the ledger row it began.
    struct Held {
        let lease: Lease
        let ttlMilliseconds: Int64
        let ledgerID: Int64
        let ledgerStartedAt: Int64
        /// PostgreSQL: where this host keeps the ends it could not write.
        let unrecorded: UnrecordedEnds?
    }

    /// What taking the lease came to: held (the pass runs), or a report to return (skipped, or the store failed).
    enum LeaseTaking {
        case held(Held)
        case finished(Report)
    }

    /// The report of a pass that failed with `error` before its job ran, printed and logged.
    private func failedEarly(_ job: any Job, error: Error, logger: Logger, start: Start, dryRun: Bool) -> Report {
        let failure = StoreFailure.jobError(for: error)
        logger.error("pass.failed", ["category": .category(failure), "exit_code": .int(failure.exitCode.rawValue)])
        emit(job: job.name, result: JobResult(outcome: .failed), error: failure, exitCode: failure.exitCode, startedAt: start.at, durationMilliseconds: start.elapsedMilliseconds(), dryRun: dryRun)
        return Report(result: JobResult(outcome: .failed), exitCode: failure.exitCode, error: failure, startedAt: start.at, durationMilliseconds: start.elapsedMilliseconds())
    }

    /// SQLite: the quick check before a job that writes; the failed pass's report when the store is damaged, else nil.
    private func checkStore(_ job: any Job, database: Database, logger: Logger, start: Start, dryRun: Bool) -> Report? {
        do {
            try PassRunner.quickCheck(database)
            return nil
        } catch {
            let failure = StoreFailure.jobError(for: error)
            if failure.category == "store-corrupt" || failure.category == "store-not-a-database" { database.leaveMainFileUntouchedOnClose() }
            return failedEarly(job, error: failure, logger: logger, start: start, dryRun: dryRun)
        }
    }

    /// Takes the job's lease and begins its ledger row in one write (after writing the ends this host kept, and
    /// taking over abandoned shares); a pass that finds the lease held is recorded as skipped.
    private func takeLease(_ job: any Job, database: Database, logger: Logger, start: Start) -> LeaseTaking {
        let sharesWork = job.passesShareWork && database.engine == .postgresql
        let lease = sharesWork ? Lease.shared(database: database, job: job.name) : Lease(database: database, job: job.name)
        let ttl = Int64(job.leaseSeconds) * 1000
        // PostgreSQL: ends of earlier passes this host could not write (the server was down or took no writes).
        let unrecorded = database.engine == .postgresql ? UnrecordedEnds(environment: invocation.environment) : nil
        var keptEnds: [String] = []
        var held: Held?
        do {
            try database.write { _ in
                held = nil
                // Stamped once the write lock is held, not at process start: a pass that waited for the lock
                // behind another pass's release must not appear in the ledger to have worked alongside it.
                // Two clocks: the lease's expiry is the real clock (it is about live processes); the ledger's times
                // are the invocation's clock, the one `maintain-store` prunes the ledger by (the emulated day under
                // `--now`). The lease's acquisition time is the ledger row's start, which ties the two together.
                let leaseNow = Date().unixMilliseconds
                let startedMs = invocation.clock.now().unixMilliseconds
                // First the ends this host kept, so their rows say what the passes were, not `killed`.
                if let unrecorded {
                    let (files, rows) = try unrecorded.write(job: job.name, on: database)
                    keptEnds = files
                    if rows > 0 { logger.info("ledger.kept_end_written", ["runs": .int(rows)]) }
                }
                if sharesWork {
                    var abandoned = 0
                    for startedAt in try lease.takeOverAbandonedShares(of: job.name, now: leaseNow) {
                        abandoned += try Ledger(database: database).abandonRunning(job: job.name, startedAt: startedAt, finishedAt: startedMs)
                    }
                    if abandoned > 0 { logger.warn("lease.taken_over", ["abandoned_runs": .int(abandoned)]) }
                }
                switch try lease.acquire(now: leaseNow, acquiredAt: startedMs, ttlMilliseconds: ttl) {
                case .heldByAnother:
                    try Ledger(database: database).record(job: job.name, startedAt: startedMs, outcome: .skipped, exitCode: .success, reason: "lease-held")
                case .acquired(let tookOver):
                    if tookOver {
                        let abandoned = try Ledger(database: database).abandonRunning(job: job.name, finishedAt: startedMs)
                        logger.warn("lease.taken_over", ["abandoned_runs": .int(abandoned)])
                    }
                    let ledgerID = try Ledger(database: database).begin(job: job.name, startedAt: startedMs)
                    held = Held(lease: lease, ttlMilliseconds: ttl, ledgerID: ledgerID, ledgerStartedAt: startedMs, unrecorded: unrecorded)
                }
            }
        } catch {
            held = nil
            return .finished(failedEarly(job, error: error, logger: logger, start: start, dryRun: false))
        }
        unrecorded?.remove(keptEnds)
        if let held { return .held(held) }
        let result = JobResult.skipped("lease-held")
        logger.info("pass.skipped", ["reason": "lease-held"])
        finishMetrics(job: job.name, outcome: .skipped, database: database, start: start, exitCode: .success, counts: result.counts, logger: logger)
        emit(job: job.name, result: result, error: nil, exitCode: .success, startedAt: start.at, durationMilliseconds: start.elapsedMilliseconds(), dryRun: false)
        return .finished(Report(result: result, exitCode: .success, error: nil, startedAt: start.at, durationMilliseconds: start.elapsedMilliseconds()))
    }

    /// Renews the held lease from the job's `checkCancellation()` once a third of its TTL has passed on the monotonic
    /// clock, so a slow batch never lets the lease lapse under a live pass. The new expiry is a wall stamp: the store
    /// compares it across processes.
    private func renewLease(_ held: Held, context: JobContext) {
        let clock = context.monotonic
        var lastRenewal = clock.now()
        context.heartbeat = {
            if clock.seconds(since: lastRenewal) * 1000 >= Double(held.ttlMilliseconds) / 3 {
                try held.lease.renew(now: Date().unixMilliseconds, ttlMilliseconds: held.ttlMilliseconds)
                lastRenewal = clock.now()
            }
        }
    }

    /// Runs the job; a thrown error becomes the pass's failure, with what it committed so far as its counts.
    private func runJob(_ job: any Job, context: JobContext) -> (JobResult, JobError?) {
        do {
            return (try job.run(context), nil)
        } catch {
            var stopped = StoreFailure.jobError(for: error)
            // SIGTERM aborts a transfer in flight (HTTPClient), which the job may report as its service being
            // unavailable or a transient failure: after a stop request that is the stop, reported as such (75).
            if shim_termination_signal() != 0, stopped.exitCode == .unavailable || stopped.exitCode == .temporaryFailure {
                stopped = .cancelled
            }
            return (JobResult(outcome: .failed, counts: context.committed), stopped)
        }
    }

    /// Finishes the ledger row and releases the lease; a lost PostgreSQL connection tries a new one, and an end no
    /// connection could write is kept on this host for its next pass.
    private func recordEnd(_ job: any Job, held: Held, database: Database, result: JobResult, failure: JobError?, exitCode: ExitCode, duration: Int, logger: Logger) {
        let reason = failure?.category ?? result.reason
        func recordEnd(on store: Database) throws {
            try store.write { _ in
                try Ledger(database: store).finish(id: held.ledgerID, outcome: result.outcome, exitCode: exitCode, finishedAt: invocation.clock.now().unixMilliseconds,
                                                   durationMilliseconds: duration, counts: result.counts, reason: reason)
                try held.lease.on(store).release()
            }
        }
        do {
            try recordEnd(on: database)
        } catch {
            // PostgreSQL: a pass whose connection was lost (the server restarted under it) records its end on a
            // new connection, so the ledger says what it was (75, store-connection-lost), not `killed`
            // (docs/roles/relay.md, "PostgreSQL faults"). Five tries a second apart; a server still down, or one
            // that accepts no writes, leaves the row to the next pass.
            var recorded = false
            if database.engine == .postgresql, let lost = error as? StoreError, lost.kind == .connectionLost || lost.kind == .unavailable {
                for attempt in 0..<5 where !recorded {
                    if attempt > 0 { usleep(1_000_000) }
                    if let fresh = try? Database(path: invocation.storePath), (try? recordEnd(on: fresh)) != nil { recorded = true }
                }
            }
            if !recorded {
                logger.error("ledger.write_failed", ["category": .category(StoreFailure.jobError(for: error))])
                // Kept on this host instead: its next pass of this job writes it (`UnrecordedEnds`).
                if let unrecorded = held.unrecorded {
                    let end = UnrecordedEnds.End(outcome: result.outcome.rawValue, exitCode: Int(exitCode.rawValue), finishedAt: invocation.clock.now().unixMilliseconds,
                                                 durationMilliseconds: duration, counts: result.counts.json.rendered(), reason: reason)
                    do { try unrecorded.keep(end, job: job.name, id: held.ledgerID, startedAt: held.ledgerStartedAt) } catch {
                        logger.error("ledger.end_not_kept", ["category": .category(StoreFailure.jobError(for: error))])
                    }
                }
            }
        }
    }

    /// "PRAGMA quick_check" over every page (O(N); it does not compare indexes with their tables, which `doctor`'s
    /// integrity_check does): a damaged store fails with 73 (`store-corrupt`).
    static func quickCheck(_ database: Database) throws {
        let problems = try database.query("PRAGMA quick_check(1)").map { try $0.get(0, as: String.self) }
        guard problems == ["ok"] else {
            throw JobError.store("store-corrupt", "the store file is damaged (quick_check found a problem); it was left untouched — restore a backup or move it aside")
        }
    }

    private func finishMetrics(job: String, outcome: JobResult.Outcome, database: Database, start: Start, exitCode: ExitCode, counts: Counts, logger: Logger) {
        guard let directory = invocation.metricsDirectory else { return }
        let lastSuccess = (try? Ledger(database: database).lastSuccess(job: job)).flatMap { $0 }.map { Date(unixMilliseconds: $0) }
        do {
            try MetricsWriter(directory: directory).write(job: job, outcome: outcome, finishedAt: Date(), lastSuccess: lastSuccess,
                                                          durationSeconds: start.elapsedSeconds(), exitCode: exitCode, counts: counts)
        } catch {
            logger.warn("metrics.write_failed", ["category": .category(StoreFailure.jobError(for: error))])
        }
    }

    /// Prints the pass result: one JSON object with `--json`, else a short summary; failures also on stderr.
    private func emit(job: String, result: JobResult, error: JobError?, exitCode: ExitCode, startedAt: Date, durationMilliseconds: Int, dryRun: Bool) {
        if invocation.jsonOutput {
            var fields: [(String, JSON)] = [
                ("job", .string(job)), ("outcome", .string(result.outcome.rawValue)), ("started_at", .string(startedAt.rfc3339)),
                ("duration_ms", .number(durationMilliseconds)), ("counts", result.counts.json), ("exit_code", .number(exitCode.rawValue)),
                ("dry_run", .bool(dryRun)),
            ]
            if let reason = result.reason { fields.append(("reason", .string(reason))) }
            if !result.details.isEmpty { fields.append(("details", .object(result.details))) }
            if let error { fields.append(("error", ["category": .string(error.category), "message": .string(error.message)])) }
            invocation.output.write(JSON.object(fields).rendered() + "\n")
        } else {
            var line = "\(job): \(result.outcome.rawValue)"
            if dryRun { line += " (dry run, nothing changed)" }
            if let reason = result.reason { line += " (\(reason))" }
            line += " in \(durationMilliseconds) ms"
            if !result.counts.entries.isEmpty {
                line += ": " + result.counts.entries.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            }
            invocation.output.write(line + "\n")
            for (key, value) in result.details {
                if case .string(let text) = value { invocation.output.write("  \(key): \(text)\n") }
                else { invocation.output.write("  \(key): \(value.rendered())\n") }
            }
        }
        if let error {
            invocation.errorOutput(Logger.failureLine(command: job, error, format: invocation.logFormat,
                                                      priorityPrefix: Logger.stderrIsJournal(environment: invocation.environment), usageHint: nil))
        }
    }
}
