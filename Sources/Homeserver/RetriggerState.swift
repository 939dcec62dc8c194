import Runner
import Store

/// What `retrigger-stale` remembers between passes, and the pure rules over it: whether a pass may touch
/// the network, and how each relay answer moves the state. `watch-syncthing` moves the same state with its
/// answers (its wake-ups count as the last sent), and adds its presence (`WatcherPresence`).
struct RetriggerState: Equatable {
    var lastSentAt: Int64?
    var lastCheckedAt: Int64?
    var lastAnswer: String?
    /// A 400–403 answer: the subscription is inactive; re-checked after one cadence.
    var inactiveUntilAt: Int64?
    /// A 429 (`Retry-After`) or exhausted 5xx retries: no network before this instant.
    var backoffUntilAt: Int64?
    var transientFailures = 0
    /// The watcher holds a wake-up back (debounce, or a relay back-off) since this instant; nil when none.
    var watcherPendingSince: Int64?
    /// When the watcher last said it is alive.
    var watcherSeenAt: Int64?

    /// How recent the watcher's last sign of life must be for its pending wake-up to hold the sweep back.
    static let watcherAliveMilliseconds: Int64 = 90_000

    /// Why a pass does nothing.
    enum Skip: String, LogWord { case disabled, cadence, backoff, subscriptionInactive = "subscription-inactive", watcherPending = "watcher-pending" }

    /// Pure gate: nil when the pass may check Syncthing and send, else why not.
    func skipReason(now: Int64, cadenceSeconds: Int) -> Skip? {
        if cadenceSeconds == 0 { return .disabled }
        if let until = backoffUntilAt, now < until { return .backoff }
        if let until = inactiveUntilAt, now < until { return .subscriptionInactive }
        if let sent = lastSentAt, now - sent < Int64(cadenceSeconds) * 1000 { return .cadence }
        if watcherPendingSince != nil, let seen = watcherSeenAt, abs(now - seen) < Self.watcherAliveMilliseconds { return .watcherPending }
        return nil
    }

    /// The state with stored times the clock cannot have produced treated as now (the clock went backwards since
    /// they were stored): a last send or check in the future becomes `now`; an inactive re-check or back-off instant
    /// further ahead than its longest span (one cadence, at least a minute) is brought back to `now` plus that span.
    /// `changed` tells whether anything was repaired (logged once as `clock.stored_time_in_future`, then stored).
    func clamped(now: Int64, cadenceSeconds: Int) -> (state: RetriggerState, changed: Bool) {
        var next = self
        let span = max(Int64(cadenceSeconds) * 1000, 60_000)
        if let sent = lastSentAt, sent > now { next.lastSentAt = now }
        if let checked = lastCheckedAt, checked > now { next.lastCheckedAt = now }
        if let until = inactiveUntilAt, until > now + span { next.inactiveUntilAt = now + span }
        if let until = backoffUntilAt, until > now + span { next.backoffUntilAt = now + span }
        return (next, next != self)
    }

    /// Back-off stored after a pass exhausted its tries: one minute, doubling per failed pass, at most one cadence.
    static func transientBackoffMilliseconds(failures: Int, cadenceSeconds: Int) -> Int64 {
        let doubled = 60_000 * (Int64(1) << Int64(min(max(failures - 1, 0), 20)))
        return min(doubled, max(Int64(cadenceSeconds) * 1000, 60_000))
    }

    /// The state after a pass found every peer in sync.
    func inSync(now: Int64) -> RetriggerState {
        var next = self
        next.lastCheckedAt = now
        next.lastAnswer = "in-sync"
        return next
    }

    /// The state after the relay answered `answer` (or the tries ran out, for `.transient`).
    func after(_ answer: RelayAnswer, now: Int64, cadenceSeconds: Int) -> RetriggerState {
        var next = self
        next.lastCheckedAt = now
        switch answer {
        case .sent:
            next.lastSentAt = now
            next.lastAnswer = "sent"
            next.inactiveUntilAt = nil
            next.backoffUntilAt = nil
            next.transientFailures = 0
        case .subscriptionInactive:
            next.lastAnswer = "subscription-inactive"
            next.inactiveUntilAt = now + Int64(cadenceSeconds) * 1000
            next.backoffUntilAt = nil
            next.transientFailures = 0
        case .notFound:
            next.lastAnswer = "relay-not-found"
        case .rateLimited(let until):
            next.lastAnswer = "rate-limited"
            next.backoffUntilAt = max(until, now)
        case .transient:
            next.lastAnswer = "transient"
            next.transientFailures += 1
            next.backoffUntilAt = now + Self.transientBackoffMilliseconds(failures: next.transientFailures, cadenceSeconds: cadenceSeconds)
        }
        return next
    }

    static func load(_ db: Database) throws -> RetriggerState {
        guard let row = try db.queryOne("""
            SELECT last_sent_at, last_checked_at, last_answer, inactive_until_at, backoff_until_at, transient_failures,
                watcher_pending_since, watcher_seen_at FROM relay_helper_state WHERE id = 1
            """) else { return RetriggerState() }
        return RetriggerState(lastSentAt: try row.get(0), lastCheckedAt: try row.get(1), lastAnswer: try row.get(2),
                              inactiveUntilAt: try row.get(3), backoffUntilAt: try row.get(4), transientFailures: try row.get(5),
                              watcherPendingSince: try row.get(6), watcherSeenAt: try row.get(7))
    }

    /// Stores the sweep's columns; the watcher's presence columns are written only by `WatcherPresence`.
    func save(_ db: Database) throws {
        try db.writeIfNeeded { db in
            try db.execute("""
                INSERT INTO relay_helper_state (id, last_sent_at, last_checked_at, last_answer, inactive_until_at, backoff_until_at, transient_failures)
                VALUES (1, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET last_sent_at = excluded.last_sent_at, last_checked_at = excluded.last_checked_at,
                    last_answer = excluded.last_answer, inactive_until_at = excluded.inactive_until_at,
                    backoff_until_at = excluded.backoff_until_at, transient_failures = excluded.transient_failures
                """, [lastSentAt, lastCheckedAt, lastAnswer, inactiveUntilAt, backoffUntilAt, transientFailures])
        }
    }
}
