import Elapsed
import Foundation

/// One writer for a store (SQLite or PostgreSQL) that commits many requests' writes together (group commit).
///
/// Under `synchronous = FULL` (PostgreSQL: `synchronous_commit = on`) every commit waits for the disk to flush the
/// write-ahead log, so a server that commits each request alone runs at the disk's flushes per second, whatever
/// its CPU could do. Requests here
/// are queued to one thread that owns one connection: it opens a transaction, runs every queued request in a
/// savepoint of its own, keeps taking requests that arrive meanwhile until the queue is empty, `maxBatch`
/// requests ran, or `maxBatchDuration` passed, and then commits once. Only after that commit returned (the batch
/// is durable) is any request of the batch answered, so an acknowledged write is never lost to a crash.
///
/// Failures stay with their request: a request whose body throws is rolled back to its savepoint and answered
/// with its error while the others of the batch go on. When the batch as a whole fails (`BEGIN` or `COMMIT`
/// fails, or an error such as a full disk rolled back the whole transaction), every request of it is run again
/// alone, each in its own transaction, and answered with its own outcome. The bodies must therefore keep their
/// effects inside the store (anything else belongs in the completion, which runs once, after the commit).
///
/// A batch whose requests changed no row is rolled back instead of committed (there is nothing to make durable),
/// so requests that write nothing cost no commit and are not counted as one. Rows changed are counted with
/// `sqlite3_total_changes64`, which counts INSERT, UPDATE and DELETE only: schema changes (DDL) would be rolled
/// back, so they never go through this writer (migrations run on their own connection).
///
/// Reads do not belong here: they run on connections of their own. SQLite only; PostgreSQL stores keep one
/// transaction per request. See docs/group-commit.md.
package final class GroupCommitWriter: @unchecked Sendable {
    // @unchecked: `queue`, `stopped` and the counters are touched only under `condition`; `database` only by the
    // writer thread.

    /// What the writer did so far.
    package struct Statistics: Sendable, Equatable {
        /// Requests answered.
        package var requests = 0
        /// Durable commits made (batches, and the requests of failed batches run again alone).
        package var commits = 0
        /// Batches whose whole transaction failed, so their requests were run again alone.
        package var failedBatches = 0

        package init(requests: Int = 0, commits: Int = 0, failedBatches: Int = 0) {
            self.requests = requests
            self.commits = commits
            self.failedBatches = failedBatches
        }
    }

    /// One queued request: runs its body (on the writer's connection) and hands back how to answer it.
    private struct Job {
        let attempt: (Database) -> () -> Void
        let fail: (any Error) -> Void
    }

    /// The result a blocked `perform` caller waits for (set once, by the writer thread, before the semaphore is signalled).
    private final class ResultBox<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }

    /// A request to a writer that was stopped.
    package struct Stopped: Error, Sendable {}

    package let maxBatch: Int
    package let maxBatchDuration: TimeInterval
    private let open: () throws -> Database
    /// The clock the batch bound is timed on.
    private let clock: MonotonicClock
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var stopped = false
    private var finished = false
    private var counters = Statistics()
    private var database: Database?
    private var thread: Thread?

    /// A writer over the connection `open` makes (opened on first use, and again after a failure to open).
    package init(maxBatch: Int = 256, maxBatchDuration: TimeInterval = 0.002, clock: MonotonicClock = .system, open: @escaping () throws -> Database) {
        self.maxBatch = max(1, maxBatch)
        self.maxBatchDuration = maxBatchDuration
        self.clock = clock
        self.open = open
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "store-writer"
        self.thread = thread
        thread.start()
    }

    /// A writer over the SQLite file at `path`.
    package convenience init(path: String, maxBatch: Int = 256, maxBatchDuration: TimeInterval = 0.002) {
        self.init(maxBatch: maxBatch, maxBatchDuration: maxBatchDuration, open: { try Database(path: path) })
    }

    deinit { stop() }

    /// Queues `body` (its `write { }` calls become savepoints of the batch) and calls `completion` on the writer's
    /// thread once the batch holding it is durable, or with the error that failed it. A stopped writer answers
    /// `Stopped` at once.
    package func submit<T>(_ body: @escaping (Database) throws -> T, completion: @escaping (Result<T, any Error>) -> Void) {
        let job = Job(attempt: { database in
            let result = Result { try body(database) }
            return { completion(result) }
        }, fail: { completion(.failure($0)) })
        condition.lock()
        guard !stopped else {
            condition.unlock()
            completion(.failure(Stopped()))
            return
        }
        queue.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` in the next batch and returns its result once that batch is durable (blocking the caller).
    package func perform<T>(_ body: @escaping (Database) throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        submit(body) { result in
            box.result = result
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    /// Counts so far.
    package var statistics: Statistics { condition.withLock { counters } }

    /// Refuses new requests, answers the queued ones, and ends the writer thread.
    package func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    // MARK: The writer thread

    private func loop() {
        while let first = take(waiting: true, limit: maxBatch) {
            run(batchStartingWith: first)
        }
        database = nil
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }

    /// Up to `limit` queued jobs; with `waiting`, blocks for the first one (nil once stopped and empty).
    private func take(waiting: Bool, limit: Int = 1) -> [Job]? {
        condition.lock()
        defer { condition.unlock() }
        while waiting && queue.isEmpty && !stopped { condition.wait() }
        if queue.isEmpty { return waiting ? nil : [] }
        let count = min(limit, queue.count)
        let jobs = Array(queue.prefix(count))
        queue.removeFirst(count)
        return jobs
    }

    private func run(batchStartingWith first: [Job]) {
        var jobs = first
        let database: Database
        do {
            database = try connection()
            try database.beginBatch()
        } catch {
            finishAlone(jobs)
            return
        }
        let started = clock.now()
        let changesBefore = database.sqliteTotalChanges
        var answers: [() -> Void] = []
        var index = 0
        var lost = false
        var deferred: [Job] = []
        while index < jobs.count {
            database.startBatchRequest()
            let answer = jobs[index].attempt(database)
            if database.batchRequestDeferred {
                // PostgreSQL: it would have waited for a lock while the batch holds others' (or lost a deadlock);
                // its savepoint is rolled back. It and the jobs after it start the next batch, where the first waits.
                deferred = Array(jobs[index...])
                jobs.removeSubrange(index...)
                if database.batchTransactionIsOpen { break }
                lost = true
                break
            }
            answers.append(answer)
            index += 1
            if !database.batchTransactionIsOpen {
                lost = true
                break
            }
            if index == jobs.count && jobs.count < maxBatch && clock.seconds(since: started) < maxBatchDuration {
                jobs += take(waiting: false, limit: maxBatch - jobs.count) ?? []
            }
        }
        if lost {
            database.abandonBatch()
            condition.withLock { counters.failedBatches += 1 }
            finishAlone(jobs + deferred)
            return
        }
        let wrote: Bool
        var transactionID: Int64?
        if database.engine == .postgresql {
            do {
                transactionID = try database.postgresBatchTransactionID()
            } catch {
                database.abandonBatch()
                condition.withLock { counters.failedBatches += 1 }
                finishAlone(jobs + deferred)
                return
            }
            wrote = transactionID != nil
        } else {
            wrote = database.sqliteTotalChanges != changesBefore
        }
        if !wrote {
            // Nothing to make durable: end the transaction without a commit.
            database.abandonBatch()
            finish(jobs, answers, committed: false, deferred: deferred)
            return
        }
        do {
            try database.commitBatch()
        } catch {
            database.abandonBatch()
            if let transactionID, database.isBroken {
                // PostgreSQL: the connection went while COMMIT was under way, so the batch may be committed all
                // the same. Running its requests again would count them twice (and answer a v2 trigger "replayed"),
                // so a new connection asks the server what became of the transaction.
                switch committedStatus(of: transactionID) {
                case .committed:
                    finish(jobs, answers, committed: true, deferred: deferred)
                    return
                case .unknown:
                    condition.withLock {
                        counters.failedBatches += 1
                        counters.requests += jobs.count
                    }
                    for job in jobs { job.fail(error) }
                    requeueFirst(deferred)
                    return
                case .aborted:
                    break
                }
            }
            condition.withLock { counters.failedBatches += 1 }
            finishAlone(jobs + deferred)
            return
        }
        finish(jobs, answers, committed: true, deferred: deferred)
    }

    /// Counts and answers a batch that ended (committed, or rolled back having written nothing), then puts the
    /// deferred jobs back at the head of the queue.
    private func finish(_ jobs: [Job], _ answers: [() -> Void], committed: Bool, deferred: [Job]) {
        condition.withLock {
            if committed { counters.commits += 1 }
            counters.requests += jobs.count
        }
        for answer in answers { answer() }
        requeueFirst(deferred)
    }

    private func requeueFirst(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        condition.withLock {
            queue.insert(contentsOf: jobs, at: 0)
            condition.signal()
        }
    }

    private enum CommitStatus { case committed, aborted, unknown }

    /// What the server says became of a batch's transaction whose `COMMIT` lost its connection (`txid_status`,
    /// asked on a new connection; the server may still be finishing it, so "in progress" is asked again).
    private func committedStatus(of transactionID: Int64) -> CommitStatus {
        for attempt in 0..<5 {
            if attempt > 0 { usleep(200_000) }
            guard let database = try? connection() else { return .unknown }
            guard let status = try? database.postgresTransactionStatus(transactionID) else {
                if database.isBroken { continue }
                return .unknown
            }
            switch status {
            case "committed": return .committed
            case "aborted": return .aborted
            default: continue
            }
        }
        return .unknown
    }

    /// Runs each job alone, each `write { }` its own transaction, and answers it with its own outcome.
    private func finishAlone(_ jobs: [Job]) {
        for job in jobs {
            let answer: () -> Void
            do {
                let database = try connection()
                let before = database.commits
                answer = job.attempt(database)
                let made = database.commits - before
                condition.withLock { counters.commits += made }
            } catch {
                self.database = nil
                let failure = error
                answer = { job.fail(failure) }
            }
            condition.withLock { counters.requests += 1 }
            answer()
        }
    }

    private func connection() throws -> Database {
        if let database, !database.isBroken { return database }
        database = nil
        let opened = try open()
        database = opened
        return opened
    }
}

