import CShims
import Foundation
import Runner

/// The watcher's loop (`watch-syncthing`): start-up, then events in, one debounced wake-up out, until a stop signal.
///
/// Runs on the command's thread and owns the store connection; the event stream polls on its own thread
/// (`EventStream`). Times that are stored come from the context's clock; debounce and pauses use monotonic time.
final class ChangeWatcher {
    let context: JobContext
    let syncthing: SyncthingClient
    let sender: TriggerSender
    /// For the wake-up sent on SIGTERM: short timeouts, so it is out within 5 s.
    let finalSender: TriggerSender
    let cadenceSeconds: Int
    let announce: Bool
    let notifier: SystemdNotifier
    private var filter: ChangeFilter?
    private let watched: Set<String>?
    private var schedule: TriggerSchedule
    private(set) var metrics = WatcherMetrics()
    private var attempt = 0
    private let metricsDirectory: String?

    /// How often the watcher's presence is stored and its metrics written (seconds).
    static let heartbeatSeconds = 15.0
    /// Pause bounds for a Syncthing that is not up yet at start (seconds).
    static let startupRetryBase = 1.0, startupRetryCap = 30.0
    /// Pause bounds for transient relay failures (seconds).
    static let relayRetryBase = 1.0, relayRetryCap = 300.0

    init(context: JobContext, syncthing: SyncthingClient, configPath: String?, relayURL: String, cadenceSeconds: Int, debounceSeconds: Double, announce: Bool,
         watched: Set<String>?, notifier: SystemdNotifier) {
        self.context = context
        self.syncthing = syncthing
        let caFile = context.env("RELAY_CA_FILE")
        sender = TriggerSender(relay: RelayClient(baseURL: relayURL, caFile: caFile, connectTimeout: 5, totalTimeout: 10),
                               configPath: configPath, cadenceSeconds: cadenceSeconds, database: context.database)
        finalSender = TriggerSender(relay: RelayClient(baseURL: relayURL, caFile: caFile, connectTimeout: 2, totalTimeout: 4),
                                    configPath: configPath, cadenceSeconds: cadenceSeconds, database: context.database)
        self.cadenceSeconds = cadenceSeconds
        self.announce = announce
        self.watched = watched
        self.notifier = notifier
        schedule = TriggerSchedule(debounceSeconds: debounceSeconds)
        metricsDirectory = context.env("JOB_METRICS_DIR")
    }

    private var stopRequested: Bool { StopSignals.heard }

    func run() throws {
        let logger = context.logger
        guard let status = try readStatus() else { return finish(sent: false) }
        filter = ChangeFilter(watched: watched, myID: status.myID)

        let health = sender.relay.health()
        if health.status == 404 { throw JobError.configuration("relay-not-found", "the relay answered 404 to /api/v1/health: RELAY_URL is wrong or the relay is broken") }
        if health.healthy { logger.info("relay.healthy") } else { logger.warn("relay.health_failed", ["status": .int(health.status ?? 0)]) }

        let stream = EventStream(client: syncthing, startTime: status.startTime, uptime: status.uptime)
        stream.start()
        defer { stream.stop() }
        // Ready once Syncthing has the subscription: from then on no change is missed.
        var ready = false
        while !ready {
            if stopRequested { return finish(sent: false) }
            stream.wait(until: EventStream.monotonic() + 0.25)
            for item in stream.drain() { if case .subscribed = item { ready = true } else { handle(item) } }
        }
        notifier.notify("READY=1\nSTATUS=subscribed to Syncthing's event stream")
        logger.info("watch.subscribed", ["debounce_ms": .int(Int(schedule.debounceSeconds * 1000)), "announce": .bool(announce)])
        if announce { schedule.announce(at: EventStream.monotonic()) }
        var pendingSince: Int64? = announce ? context.nowMilliseconds : nil
        try storePresence(pendingSince: pendingSince)
        // What starting touched (libraries' tables, one-time code) is given back: idle, the watcher holds what it uses.
        ResidentPages.release()

        var nextHeartbeat = EventStream.monotonic() + Self.heartbeatSeconds
        var nextWatchdog = EventStream.monotonic()
        while true {
            if stopRequested {
                // A recorded stop signal aborts every HTTP transfer; the pending wake-up must still go out, so the
                // signal is taken (a second one during the final send aborts it).
                shim_reset_termination()
                let sent = schedule.isPending ? sendFinal(deviceID: status.myID) : false
                return finish(sent: sent)
            }
            for item in stream.drain() { handle(item) }
            let now = EventStream.monotonic()
            if schedule.isPending, pendingSince == nil {
                pendingSince = context.nowMilliseconds
                try storePresence(pendingSince: pendingSince)
            }
            if schedule.isDue(at: now) {
                try send(deviceID: status.myID)
                if !schedule.isPending {
                    pendingSince = nil
                    try storePresence(pendingSince: nil)
                    ResidentPages.release()
                }
            }
            if now >= nextHeartbeat {
                nextHeartbeat = now + Self.heartbeatSeconds
                try storePresence(pendingSince: pendingSince)
            }
            if let interval = notifier.watchdogInterval, now >= nextWatchdog {
                nextWatchdog = now + interval
                // Only while the stream thread shows life: a poll returned within its own timeout and some slack.
                if stream.secondsSinceProgress < Double(SyncthingClient.eventPollSeconds) + 30 { notifier.notify("WATCHDOG=1") }
            }
            let wake = min(schedule.dueAt ?? .infinity, now + 0.25)
            stream.wait(until: wake)
        }
    }

    /// The Device ID (and start time) from `/rest/system/status`, retried with back-off while Syncthing is not up or
    /// answers 429 or 5xx; nil when a stop signal came first. A refused key or another 4xx is a configuration error.
    private func readStatus() throws -> (myID: String, startTime: String?, uptime: Int64?)? {
        var failures = 0
        while !stopRequested {
            do { return try syncthing.status() } catch {
                switch error {
                case .keyRefused: throw error.jobError
                case .unexpectedStatus(let code) where (400..<500).contains(code) && code != 429:
                    throw JobError.configuration("syncthing-answer", "Syncthing's REST API answered \(code) to /rest/system/status; check SYNCTHING_API_URL")
                default:
                    failures += 1
                    context.logger.warn("syncthing.not_ready", ["try": .int(failures)])
                    sleepUnlessStopped(TriggerSender.retryPause(attempt: failures, base: Self.startupRetryBase, cap: Self.startupRetryCap))
                }
            }
        }
        return nil
    }

    /// Counts one item of the stream and, for a change, schedules the wake-up.
    private func handle(_ item: EventStream.Item) {
        switch item {
        case .subscribed:
            break
        case .restarted:
            metrics.restartsDetected += 1
            context.logger.warn("syncthing.restarted")
        case .failed:
            metrics.streamErrors += 1
            context.logger.warn("syncthing.events_failed", ["errors": .int(metrics.streamErrors)])
        case .events(let events):
            guard var filter else { return }
            let before = metrics
            metrics.eventsSeen += events.count
            var snapshot: ChangeFilter.Snapshot?
            for event in events {
                if filter.mayBeChange(event), snapshot == nil { snapshot = readSnapshot() }
                let verdict = filter.judge(event, snapshot: snapshot ?? lastSnapshot)
                switch verdict {
                case .change:
                    metrics.changes += 1
                    if schedule.change(at: EventStream.monotonic()) { metrics.debounced += 1 }
                case .duplicate: metrics.duplicates += 1
                case .unwatched, .paused, .inSync: metrics.filtered += 1
                case .ignored: break
                }
            }
            self.filter = filter
            // Counts and fixed words only (docs/design.md §5): how the batch was judged, and whether a wake-up is held back now.
            context.logger.debug("watch.events_handled", ["events": .int(events.count), "changes": .int(metrics.changes - before.changes),
                                                          "duplicates": .int(metrics.duplicates - before.duplicates),
                                                          "filtered": .int(metrics.filtered - before.filtered), "pending": .bool(schedule.isPending)])
        }
    }

    private var lastSnapshot = ChangeFilter.Snapshot()

    /// Which folders and devices are paused now; the last known answer when Syncthing cannot be asked.
    private func readSnapshot() -> ChangeFilter.Snapshot {
        guard let folders = try? syncthing.folders(), let devices = try? syncthing.devices() else { return lastSnapshot }
        lastSnapshot = ChangeFilter.Snapshot(pausedFolders: Set(folders.filter(\.paused).map(\.id)), pausedDevices: Set(devices.filter(\.paused).map(\.id)))
        return lastSnapshot
    }

    /// Sends the pending wake-up and reacts to the answer as the relay's error table says.
    private func send(deviceID: String) throws {
        attempt += 1
        let answer = try sender.send(deviceID: deviceID, now: context.now, logger: context.logger, attempt: attempt).answer
        try record(answer)
        let now = context.nowMilliseconds
        let monotonic = EventStream.monotonic()
        switch TriggerSender.reaction(to: answer, now: now) {
        case .delivered:
            schedule.delivered()
            attempt = 0
            metrics.triggersSent += 1
        case .recheck(let at):
            context.logger.warn("relay.subscription_inactive")
            schedule.hold(until: monotonic + Double(at - now) / 1000, transient: false)
        case .wait(let until):
            context.logger.warn("relay.rate_limited", ["wait_ms": .int(until - now)])
            schedule.hold(until: monotonic + Double(until - now) / 1000, transient: false)
        case .retry:
            let pause = TriggerSender.retryPause(attempt: schedule.failures + 1, base: Self.relayRetryBase, cap: Self.relayRetryCap)
            context.logger.warn("relay.unavailable", ["retry_ms": .int(Int(pause * 1000))])
            schedule.hold(until: monotonic + pause, transient: true)
        case .fatal(let error):
            try? WatcherPresence.stopped(context.database)
            throw error
        }
    }

    /// One last try on the way out (SIGTERM): short timeouts, no retry.
    private func sendFinal(deviceID: String) -> Bool {
        let answer = (try? finalSender.send(deviceID: deviceID, now: context.now, logger: context.logger, attempt: attempt + 1))?.answer ?? .transient
        try? record(answer)
        if answer == .sent { metrics.triggersSent += 1 }
        return answer == .sent
    }

    /// The answer into the shared state (the sweep sees the watcher's wake-ups as the last sent) and the metrics.
    private func record(_ answer: RelayAnswer) throws {
        metrics.answers[TriggerSender.AnswerClass(answer), default: 0] += 1
        let state = try RetriggerState.load(context.database)
        try state.after(answer, now: context.nowMilliseconds, cadenceSeconds: cadenceSeconds).save(context.database)
    }

    private func storePresence(pendingSince: Int64?) throws {
        try WatcherPresence.record(context.database, now: context.nowMilliseconds, pendingSince: pendingSince)
        metrics.pending = pendingSince == nil ? 0 : 1
        if let metricsDirectory, !metrics.write(to: metricsDirectory, now: context.now) { context.logger.warn("metrics.unwritable") }
    }

    private func finish(sent: Bool) {
        notifier.notify("STOPPING=1")
        try? WatcherPresence.stopped(context.database)
        metrics.pending = 0
        if let metricsDirectory { metrics.write(to: metricsDirectory, now: context.now) }
        context.logger.info("watch.stopped", ["events": .int(metrics.eventsSeen), "changes": .int(metrics.changes), "triggers": .int(metrics.triggersSent),
                                              "sent_on_stop": .bool(sent)])
    }

    private func sleepUnlessStopped(_ seconds: Double) {
        let deadline = EventStream.monotonic() + seconds
        while !stopRequested, EventStream.monotonic() < deadline { usleep(50_000) }
    }
}
