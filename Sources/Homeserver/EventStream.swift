import Elapsed
import Foundation

/// Syncthing's event stream on a thread of its own: long-polls `/rest/events` for the watcher's types and hands
/// what arrives to the watcher's loop, which waits on `condition`.
///
/// It survives what the stream does: a closed connection, a 5xx or an unreadable answer is retried after an
/// exponential, jittered pause; and a Syncthing restart (its `startTime` changes, its event ids start again at 1)
/// is detected after every failed or empty poll, and the stream is subscribed again from the start, so the first
/// change after the restart is seen.
final class EventStream: @unchecked Sendable {
    /// What the loop receives.
    enum Item {
        /// The subscription exists (Syncthing answered the first poll): the watcher is ready.
        case subscribed
        case events([SyncthingEvent])
        /// Syncthing restarted; the stream was subscribed again from event 0.
        case restarted
        /// A poll failed (no answer, a status other than 200, an unreadable answer); retried after a pause.
        case failed(SyncthingClient.Failure)
    }

    /// The loop waits on it; items and `lastProgress` are guarded by it.
    let condition = NSCondition()
    private var items: [Item] = []
    private var stopped = false
    /// Monotonic seconds of the last poll that returned (or failed): the watchdog's sign that the thread lives.
    private var progress = EventStream.monotonic()

    private let client: SyncthingClient
    private var startTime: String?
    private var uptime: Int64?
    private let pollSeconds: Int

    init(client: SyncthingClient, startTime: String?, uptime: Int64?, pollSeconds: Int = SyncthingClient.eventPollSeconds) {
        self.client = client
        self.startTime = startTime
        self.uptime = uptime
        self.pollSeconds = pollSeconds
    }

    /// Pure: whether two status answers come from different Syncthing processes (another `startTime`, or, when
    /// either lacks one, an uptime that went down).
    static func restarted(before: (startTime: String?, uptime: Int64?), now: (startTime: String?, uptime: Int64?)) -> Bool {
        if let a = before.startTime, let b = now.startTime { return a != b }
        if let a = before.uptime, let b = now.uptime { return b < a }
        return false
    }

    /// Starts the polling thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "syncthing-events"
        thread.start()
    }

    /// Asks the thread to stop after its current poll (the process may exit before that).
    func stop() {
        condition.lock()
        stopped = true
        condition.unlock()
    }

    /// Takes everything received so far.
    func drain() -> [Item] {
        condition.lock()
        defer { condition.unlock() }
        let taken = items
        items.removeAll()
        return taken
    }

    /// Waits until an item arrives or `deadline` (monotonic seconds) passes.
    func wait(until deadline: Double) {
        condition.lock()
        defer { condition.unlock() }
        if items.isEmpty {
            let seconds = max(0, deadline - Self.monotonic())
            _ = condition.wait(until: Date().addingTimeInterval(seconds))
        }
    }

    /// Monotonic seconds since the last poll returned.
    var secondsSinceProgress: Double {
        condition.lock()
        defer { condition.unlock() }
        return Self.monotonic() - progress
    }

    private func post(_ item: Item) {
        condition.lock()
        items.append(item)
        progress = Self.monotonic()
        condition.signal()
        condition.unlock()
    }

    private var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    private func touch() {
        condition.lock()
        progress = Self.monotonic()
        condition.unlock()
    }

    private func run() {
        var since: Int64 = 0
        var subscribed = false
        var failures = 0
        // After a failed or empty poll, Syncthing's start time is read before the next poll: a restart in between
        // (ids start again at 1) would otherwise leave the poll waiting for an id the new process reaches late.
        var verify = false
        while !isStopped {
            do {
                if verify {
                    let status = try client.status()
                    verify = false
                    if Self.restarted(before: (startTime, uptime), now: (status.startTime, status.uptime)) {
                        since = 0
                        post(.restarted)
                    }
                    startTime = status.startTime
                    uptime = status.uptime
                }
                // An unsubscribed poll answers at once: it makes Syncthing create the subscription, after which no
                // event of these types is lost.
                let events = try client.events(since: since, timeout: subscribed ? pollSeconds : 0)
                failures = 0
                if !subscribed {
                    subscribed = true
                    // Events from before (another run of this watcher made the subscription) are history: skipped.
                    since = events.map(\.id).max() ?? since
                    post(.subscribed)
                    continue
                }
                let fresh = events.filter { $0.id > since }
                if let last = events.map(\.id).max() { since = max(since, last) }
                if fresh.isEmpty {
                    touch()
                    verify = true
                } else {
                    post(.events(fresh))
                }
            } catch {
                failures += 1
                post(.failed(error))
                pause(TriggerSender.retryPause(attempt: failures, base: 0.5, cap: 30))
                verify = true
            }
        }
    }

    /// Sleeps `seconds`, waking early when stopped.
    private func pause(_ seconds: Double) {
        let deadline = Self.monotonic() + seconds
        while !isStopped, Self.monotonic() < deadline { usleep(50_000) }
    }

    /// Seconds on the system's monotonic clock (`MonotonicClock.system`), the watcher's one clock for waits and debounce.
    static func monotonic() -> Double { Double(MonotonicClock.system.now().nanoseconds) / 1e9 }
}
