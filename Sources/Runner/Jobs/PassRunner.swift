import CShims
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

    /// The pass itself over an open store.
    package func pass(_ job: any Job, database: Database, arguments: Arguments, logger: Logger) -> Report {
        let dryRun = arguments.flag("--dry-run")
        let context = invocation.context(name: job.name, database: database, arguments: arguments, dryRun: dryRun, catalog: catalog)
        let started = Date()
        let sharesWork = job.passesShareWork && database.engine == .postgresql
        let lease = sharesWork ? Lease.shared(database: database, job: job.name) : Lease(database: database, job: job.name)
        let ttl = Int64(job.leaseSeconds) * 1000
        var ledgerID: Int64?
        var ledgerStartedAt: Int64 = 0
        // PostgreSQL: ends of earlier passes this host could not write (the server was down or took no writes).
        let unrecorded = database.engine == .postgresql ? UnrecordedEnds(environment: invocation.environment) : nil
        var keptEnds: [String] = []

        shim_install_termination_handlers()
        logger.info("pass.started", ["dry_run": .bool(dryRun)])

        if job.checksStoreBeforeWriting, database.engine == .sqlite {
            do {
                try PassRunner.quickCheck(database)
            } catch {
                let failure = StoreFailure.jobError(for: error)
                if failure.category == "store-corrupt" || failure.category == "store-not-a-database" { database.leaveMainFileUntouchedOnClose() }
                logger.error("pass.failed", ["category": .category(failure), "exit_code": .int(failure.exitCode.rawValue)])
                emit(job: job.name, result: JobResult(outcome: .failed), error: failure, exitCode: failure.exitCode, startedAt: started, durationMilliseconds: elapsed(since: started), dryRun: dryRun)
                return Report(result: JobResult(outcome: .failed), exitCode: failure.exitCode, error: failure, startedAt: started, durationMilliseconds: elapsed(since: started))
            }
        }

        // Dry runs change nothing: no lease, no ledger row, no metrics.
        if !dryRun {
            do {
                let acquired: Bool = try database.write { _ in
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
                        return false
                    case .acquired(let tookOver):
                        if tookOver {
                            let abandoned = try Ledger(database: database).abandonRunning(job: job.name, finishedAt: startedMs)
                            logger.warn("lease.taken_over", ["abandoned_runs": .int(abandoned)])
                        }
                        ledgerID = try Ledger(database: database).begin(job: job.name, startedAt: startedMs)
                        ledgerStartedAt = startedMs
                        return true
                    }
                }
                unrecorded?.remove(keptEnds)
                if !acquired {
                    let result = JobResult.skipped("lease-held")
                    logger.info("pass.skipped", ["reason": "lease-held"])
                    finishMetrics(job: job.name, outcome: .skipped, database: database, started: started, exitCode: .success, counts: result.counts, logger: logger)
                    emit(job: job.name, result: result, error: nil, exitCode: .success, startedAt: started, durationMilliseconds: elapsed(since: started), dryRun: dryRun)
                    return Report(result: result, exitCode: .success, error: nil, startedAt: started, durationMilliseconds: elapsed(since: started))
                }
            } catch {
                let failure = StoreFailure.jobError(for: error)
                logger.error("pass.failed", ["category": .category(failure), "exit_code": .int(failure.exitCode.rawValue)])
                emit(job: job.name, result: JobResult(outcome: .failed), error: failure, exitCode: failure.exitCode, startedAt: started, durationMilliseconds: elapsed(since: started), dryRun: dryRun)
                return Report(result: JobResult(outcome: .failed), exitCode: failure.exitCode, error: failure, startedAt: started, durationMilliseconds: elapsed(since: started))
            }
            var lastRenewal = Date()
            context.heartbeat = {
                // Renew at a third of the TTL so a slow batch never lets the lease lapse under a live pass.
                if Date().timeIntervalSince(lastRenewal) * 1000 >= Double(ttl) / 3 {
                    try lease.renew(now: Date().unixMilliseconds, ttlMilliseconds: ttl)
                    lastRenewal = Date()
                }
            }
        }
        context.progressReporter = ProgressReporter.forTerminal(json: invocation.jsonOutput, environment: invocation.environment)

        var result: JobResult
        var failure: JobError?
        do {
            result = try job.run(context)
        } catch {
            var stopped = StoreFailure.jobError(for: error)
            // SIGTERM aborts a transfer in flight (HTTPClient), which the job may report as its service being
            // unavailable or a transient failure: after a stop request that is the stop, reported as such (75).
            if shim_termination_signal() != 0, stopped.exitCode == .unavailable || stopped.exitCode == .temporaryFailure {
                stopped = .cancelled
            }
            failure = stopped
            result = JobResult(outcome: .failed, counts: context.committed)
        }
        context.progressReporter?.finish()
        let exitCode = failure?.exitCode ?? .success
        let duration = elapsed(since: started)

        // A damaged file is left exactly as found: no ledger or lease writes, no checkpoint on close. The lease
        // this pass took then belongs to a dead process and is taken over by the next pass.
        let storeDamaged = failure?.category == "store-corrupt" || failure?.category == "store-not-a-database"
        if storeDamaged { database.leaveMainFileUntouchedOnClose() }
        if let ledgerID, !storeDamaged {
            let reason = failure?.category ?? result.reason
            func recordEnd(on store: Database) throws {
                try store.write { _ in
                    try Ledger(database: store).finish(id: ledgerID, outcome: result.outcome, exitCode: exitCode, finishedAt: invocation.clock.now().unixMilliseconds,
                                                       durationMilliseconds: duration, counts: result.counts, reason: reason)
                    try lease.on(store).release()
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
                    if let unrecorded {
                        let end = UnrecordedEnds.End(outcome: result.outcome.rawValue, exitCode: Int(exitCode.rawValue), finishedAt: invocation.clock.now().unixMilliseconds,
                                                     durationMilliseconds: duration, counts: result.counts.json.rendered(), reason: reason)
                        do { try unrecorded.keep(end, job: job.name, id: ledgerID, startedAt: ledgerStartedAt) } catch {
                            logger.error("ledger.end_not_kept", ["category": .category(StoreFailure.jobError(for: error))])
                        }
                    }
                }
            }
            finishMetrics(job: job.name, outcome: result.outcome, database: database, started: started, exitCode: exitCode, counts: result.counts, logger: logger)
        }

        if let failure {
            logger.error("pass.failed", ["category": .category(failure), "exit_code": .int(failure.exitCode.rawValue), "duration_ms": .int(duration)])
        } else if result.outcome == .skipped {
            logger.log(.info, "pass.skipped", ["reason": .reason(result), "duration_ms": .int(duration)], counts: result.counts)
        } else {
            logger.log(.info, "pass.completed", ["duration_ms": .int(duration)], counts: result.counts)
        }
        emit(job: job.name, result: result, error: failure, exitCode: exitCode, startedAt: started, durationMilliseconds: duration, dryRun: dryRun)
        return Report(result: result, exitCode: exitCode, error: failure, startedAt: started, durationMilliseconds: duration)
    }

    /// "PRAGMA quick_check" over every page (O(N); it does not compare indexes with their tables, which `doctor`'s
    /// integrity_check does): a damaged store fails with 73 (`store-corrupt`).
    static func quickCheck(_ database: Database) throws {
        let problems = try database.query("PRAGMA quick_check(1)").map { try $0.get(0, as: String.self) }
        guard problems == ["ok"] else {
            throw JobError.store("store-corrupt", "the store file is damaged (quick_check found a problem); it was left untouched — restore a backup or move it aside")
        }
    }

    private func finishMetrics(job: String, outcome: JobResult.Outcome, database: Database, started: Date, exitCode: ExitCode, counts: Counts, logger: Logger) {
        guard let directory = invocation.metricsDirectory else { return }
        let lastSuccess = (try? Ledger(database: database).lastSuccess(job: job)).flatMap { $0 }.map { Date(unixMilliseconds: $0) }
        do {
            try MetricsWriter(directory: directory).write(job: job, outcome: outcome, finishedAt: Date(), lastSuccess: lastSuccess,
                                                          durationSeconds: Date().timeIntervalSince(started), exitCode: exitCode, counts: counts)
        } catch {
            logger.warn("metrics.write_failed", ["category": .category(StoreFailure.jobError(for: error))])
        }
    }

    private func elapsed(since start: Date) -> Int { Int((Date().timeIntervalSince(start) * 1000).rounded()) }

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
