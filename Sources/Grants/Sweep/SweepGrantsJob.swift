import Runner

/// `sweep-grants`: lapses idle issued grants (tombstone, reason `expired`), purges tombstones past the retention,
/// drops held grants the peer revoked, finishes held offers to contacts that revoked us or lapsed (`undeliverable`,
/// notified as `offer-undeliverable`), and purges finished offer rows past the retention.
///
/// Each step runs in batches of at most 1,000 rows per write transaction with a cancellation check between them;
/// killed anywhere and run again, it reaches the same end state. `--dry-run` counts and changes nothing.
struct SweepGrantsJob: Job {
    let name = "sweep-grants"
    let summary = "lapse idle grants, purge tombstones and finished offers past retention, drop grants peers revoked"
    let schedule = Schedule.daily(hour: 4, minute: 10)
    let environmentKeys = [(name: "JOB_NOTIFY_COMMAND",
                            help: "shell command run when held offers are finished as undeliverable (JOB_NOTIFY_KIND=offer-undeliverable, JOB_NOTIFY_COUNT set)")]

    static let batchSize = 1000

    func run(_ context: JobContext) throws -> JobResult {
        let now = context.nowMilliseconds
        let grantCutoff = now - Int64(try context.settings.int(GrantsSettings.grantRetentionDays)) * 86_400_000
        let offerCutoff = now - Int64(try context.settings.int(GrantsSettings.offerRetentionDays)) * 86_400_000
        let counts = try SweepGrants.run(context.database, now: now, grantCutoff: grantCutoff, offerCutoff: offerCutoff,
                                              dryRun: context.dryRun, batchSize: SweepGrantsJob.batchSize,
                                              between: { try context.checkCancellation() },
                                              committed: { step, done in
                                                  // Recorded as batches commit, so a pass stopped part-way reports them.
                                                  context.committed[step] = done
                                                  context.progress(done: context.committed.entries.reduce(0) { $0 + $1.value }, total: nil)
                                              })
        if !context.dryRun { NotifyCommand.run(kind: "offer-undeliverable", count: counts["undeliverable_offers"], context: context) }
        return .completed(counts)
    }
}

/// The sweep itself, over any store: free of the runner so the benchmark times exactly this.
package enum SweepGrants {
    /// Runs every step in batches (or, with `dryRun`, counts what each would touch now and changes nothing).
    package static func run(_ database: Database, now: Int64, grantCutoff: Int64, offerCutoff: Int64, dryRun: Bool,
                           batchSize: Int, between: () throws -> Void,
                           committed: (_ step: String, _ done: Int) -> Void = { _, _ in }) throws -> Counts {
        var counts = Counts()
        // The sweep's batches commit with synchronous=NORMAL (WAL: no fsync per commit, the file stays consistent).
        // Losing the last batches to a power cut is harmless: the pass is idempotent and the next one redoes them,
        // and a grant whose lapse was lost is still refused, because the verifier checks the idle deadline itself.
        try database.execute("PRAGMA synchronous = NORMAL")
        // Checkpoint every ~40 MB of WAL instead of every ~4 MB: a 1,000-row batch dirties about 1,000 pages, so the
        // default would checkpoint (and fsync the store) after nearly every batch.
        try database.execute("PRAGMA wal_autocheckpoint = 10000")
        defer {
            try? database.execute("PRAGMA wal_autocheckpoint = 1000")
            try? database.execute("PRAGMA synchronous = FULL")
        }
        for step in SweepStep.all {
            let argument = step.argument(now, grantCutoff, offerCutoff)
            if dryRun {
                counts[step.name] = try database.scalar(step.countSQL, [argument]) ?? 0
                continue
            }
            if step.countFirst, (try database.scalar(step.countSQL, [argument]) as Int?) == 0 {
                counts[step.name] = 0
                continue
            }
            var done = 0
            var last: Int64 = 0
            while true {
                try between()
                var end: Int64?
                var changed = 0
                try database.write { db in
                    try db.forEachRow(step.batchSQL, [argument, last, Int64(batchSize)]) { row in
                        let rowID = try row.get(0, as: Int64.self)
                        end = max(end ?? rowID, rowID)
                        changed += 1
                    }
                }
                done += changed
                committed(step.name, done)
                guard let end, changed == batchSize else { break }
                last = end
            }
            counts[step.name] = done
        }
        return counts
    }
}
