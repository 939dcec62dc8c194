import Foundation
import Runner

/// `job homeserver status`: the helper's two paths at a glance, from the state they share in the store — whether
/// the watcher is running and holds a wake-up back, the last wake-up sent (by either path), the relay's last answer,
/// and any back-off or inactive subscription in force. Times only: no identifier is stored, so none is shown.
struct HomeserverStatusCommand: Command {
    let path = ["homeserver", "status"]
    let summary = "the homeserver helper's state: watcher running or not, pending wake-up, last sent, last relay answer, back-offs"

    func run(_ context: JobContext) throws {
        let state = try RetriggerState.load(context.database)
        let now = context.nowMilliseconds
        let running = state.watcherSeenAt.map { abs(now - $0) < RetriggerState.watcherAliveMilliseconds } ?? false
        func time(_ ms: Int64?) -> String? { ms.map { Date(unixMilliseconds: $0).rfc3339 } }
        func future(_ ms: Int64?) -> Int64? { ms.flatMap { $0 > now ? $0 : nil } }
        let fields: [(String, String?)] = [
            ("watcher", running ? "running" : "not running"),
            ("watcher_seen_at", time(state.watcherSeenAt)),
            ("wake_up_pending_since", running ? time(state.watcherPendingSince) : nil),
            ("last_sent_at", time(state.lastSentAt)),
            ("last_checked_at", time(state.lastCheckedAt)),
            ("last_answer", state.lastAnswer),
            ("backoff_until", time(future(state.backoffUntilAt))),
            ("subscription_inactive_until", time(future(state.inactiveUntilAt))),
        ]
        if context.jsonOutput {
            context.printJSON(.object(fields.map { ($0.0, JSON.optional($0.1)) }))
        } else {
            for (name, value) in fields { context.print("\(name.replacingOccurrences(of: "_", with: " ")): \(value ?? "-")") }
        }
    }
}
