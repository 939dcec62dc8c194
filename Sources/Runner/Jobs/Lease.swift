import Foundation
import Store

/// `job_leases`: at most one pass of a job works at a time.
///
/// A pass takes the lease in a write transaction; another pass started meanwhile finds it held and records
/// `skipped`. A lease whose holder is gone is taken over: at once when the holder was a process on this host
/// that no longer exists (SIGKILL, OOM), otherwise when its expiry (the job's TTL, renewed between batches)
/// has passed. Expiry is on the real clock; `acquired_at` is the ledger row's start (the invocation's clock).
package struct Lease {
    let database: Database
    let job: String
    /// `host:pid:starttime` of this process.
    package let holder: String

    package init(database: Database, job: String, holder: String = Lease.processHolder()) {
        self.database = database
        self.job = job
        self.holder = holder
    }

    /// The lease of one pass among several of `job` running at once (`Job.passesShareWork`): its row is
    /// `<job>#<holder>`, so every pass holds its own and none is skipped.
    package static func shared(database: Database, job: String, holder: String = Lease.processHolder()) -> Lease {
        Lease(database: database, job: job + Lease.sharedSeparator + holder, holder: holder)
    }

    static let sharedSeparator = "#"

    /// Removes the shared leases of `job`'s other passes whose holder is gone (expired, or a dead process on this
    /// host); returns when each was acquired, which is when its ledger row started. Inside a write transaction.
    func takeOverAbandonedShares(of job: String, now: Int64) throws -> [Int64] {
        var abandoned: [Int64] = []
        let prefix = job + Lease.sharedSeparator
        // Job names are lowercase words and hyphens: no LIKE wildcard can occur in the prefix.
        for row in try database.query("SELECT job, holder, acquired_at, expires_at FROM job_leases WHERE job LIKE ?", [prefix + "%"]) {
            let key: String = try row.get(0)
            let current: String = try row.get(1)
            let expiresAt: Int64 = try row.get(3)
            guard key != self.job, expiresAt <= now || !Lease.isAlive(holder: current) else { continue }
            if try database.execute("DELETE FROM job_leases WHERE job = ? AND holder = ?", [key, current]) > 0 {
                abandoned.append(try row.get(2))
            }
        }
        return abandoned
    }

    /// What `acquire` found.
    package enum Acquisition: Equatable {
        case acquired(tookOverAbandoned: Bool)
        case heldByAnother
    }

    /// Tries to take the lease until `now + ttl` (real clock), recording `acquiredAt` (the ledger row's start, on the
    /// invocation's clock) as when it was taken. Must run inside a write transaction.
    ///
    /// On PostgreSQL, where writers do not exclude each other, the read and the write below are made one step by an
    /// advisory lock on the job's name: two hosts starting the job together serialise here, and the second finds
    /// the first's lease. A holder on another host is alive as far as this host can tell, so its lease is taken
    /// over only once expired.
    func acquire(now: Int64, acquiredAt: Int64? = nil, ttlMilliseconds: Int64) throws -> Acquisition {
        let acquiredAt = acquiredAt ?? now
        try database.lockForWrite("job_leases:" + job)
        if let row = try database.queryOne("SELECT holder, expires_at FROM job_leases WHERE job = ?", [job]) {
            let current: String = try row.get(0)
            let expiresAt: Int64 = try row.get(1)
            let holderAlive = current != holder && expiresAt > now && Lease.isAlive(holder: current)
            if holderAlive { return .heldByAnother }
            try database.execute("UPDATE job_leases SET holder = ?, acquired_at = ?, expires_at = ? WHERE job = ?", [holder, acquiredAt, now + ttlMilliseconds, job])
            return .acquired(tookOverAbandoned: current != holder)
        }
        try database.execute("INSERT INTO job_leases (job, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)", [job, holder, acquiredAt, now + ttlMilliseconds])
        return .acquired(tookOverAbandoned: false)
    }

    /// Extends the lease this process holds.
    func renew(now: Int64, ttlMilliseconds: Int64) throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("UPDATE job_leases SET expires_at = ? WHERE job = ? AND holder = ?", [now + ttlMilliseconds, job, holder])
        }
    }

    /// The same lease over another connection to the same store (one opened after this one was lost).
    func on(_ other: Database) -> Lease { Lease(database: other, job: job, holder: holder) }

    /// Gives the lease up, if this process still holds it.
    func release() throws {
        try database.writeIfNeeded { db in
            _ = try db.execute("DELETE FROM job_leases WHERE job = ? AND holder = ?", [job, holder])
        }
    }

    /// Jobs whose pass is running now: a lease not expired whose holder is not known to be dead, with when it
    /// was acquired (`job status` shows these as running, whatever the ledger's latest row says).
    package static func running(database: Database, now: Int64) throws -> [String: Int64] {
        var result: [String: Int64] = [:]
        for row in try database.query("SELECT job, holder, acquired_at FROM job_leases WHERE expires_at > ?", [now]) {
            let holder: String = try row.get(1)
            let key: String = try row.get(0)
            // A shared lease `<job>#<holder>` shows its job as running; the earliest pass gives the time.
            let job = key.split(separator: Character(sharedSeparator), maxSplits: 1).first.map(String.init) ?? key
            let acquired: Int64 = try row.get(2)
            if isAlive(holder: holder) { result[job] = min(result[job] ?? acquired, acquired) }
        }
        return result
    }

    /// This process as a lease holder: host name, pid and the kernel's start time of the pid (so a reused
    /// pid is not mistaken for the holder).
    package static func processHolder() -> String {
        let pid = getpid()
        return "\(hostName()):\(pid):\(startTime(of: pid) ?? "0")"
    }

    /// False only when the holder is known to be dead: a process on this host whose pid is gone or reused.
    static func isAlive(holder: String) -> Bool {
        let parts = holder.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, let pid = Int32(parts[parts.count - 2]) else { return true }
        let host = parts[0..<(parts.count - 2)].joined(separator: ":")
        guard host == hostName() else { return true }  // another host: only the expiry can tell
        guard let start = startTime(of: pid) else { return false }
        return start == String(parts[parts.count - 1])
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot), or nil when there is no such process.
    static func startTime(of pid: Int32) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
              let text = String(data: data, encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // The command name (field 2) may contain spaces; fields after the closing parenthesis start at 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return String(fields[19])
    }
}
