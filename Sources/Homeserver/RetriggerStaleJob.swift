import Foundation
import Runner

/// `retrigger-stale`: the homeserver helper's stale-peer sweep. While a remote Syncthing device still needs
/// data, re-send a wake-up to the relay on a slow cadence, so a phone that missed its push (APNs keeps a
/// silent push for about an hour) catches up without waiting for the next change.
///
/// One pass: if the cadence since the last sent wake-up (by this sweep or by `watch-syncthing`) has not elapsed, a
/// 429 back-off or a transient back-off is in force, the subscription was found inactive less than a cadence ago, or
/// a running watcher holds a wake-up back → `skipped`, no network. Otherwise read `myID`, the devices and folders, and each unpaused remote device's completion per
/// shared, unpaused (and watched) folder; any need → a trigger through `TriggerSender` (authenticated
/// `POST RELAY_URL/api/v2/trigger` when this Syncthing's key is readable, else `/api/v1/trigger`). The relay's answer
/// decides the outcome (see `RelayAnswer`): 202 sent; 400–403 recorded, exit 0; 404 exit 78; 429 back-off
/// stored; 5xx and transport errors up to 3 tries with exponential back-off and jitter, then exit 75 with the
/// back-off stored. The send and the table are `TriggerSender`'s, shared with `watch-syncthing`; the pass also
/// skips while the watcher has a wake-up pending (see `RetriggerState`).
struct RetriggerStaleJob: Job {
    let name = "retrigger-stale"
    let libraries: [LazyLibrary] = [.curl]
    let summary = "re-send a relay wake-up while a Syncthing peer still needs data (slow cadence)"
    let schedule = Schedule.every(minutes: 15, randomizedDelaySeconds: 60)
    var environmentKeys: [(name: String, help: String)] { HelperConfiguration.environmentKeys }

    /// Tries per pass for a transient relay failure.
    static let maxTries = 3
    /// First pause between tries (seconds); doubles each try, with ±50 % jitter.
    static let retryBaseSeconds = 0.4

    func run(_ context: JobContext) throws -> JobResult {
        let config = try HelperConfiguration(environment: context.environment)
        let db = context.database
        let now = context.nowMilliseconds
        var state = try RetriggerState.load(db)
        // A clock that went backwards: a stored time in the future is treated as now (and stored as now).
        let repaired = state.clamped(now: now, cadenceSeconds: config.cadenceSeconds)
        if repaired.changed {
            context.logger.warn("clock.stored_time_in_future")
            state = repaired.state
            if !context.dryRun { try state.save(db) }
        }
        if let skip = state.skipReason(now: now, cadenceSeconds: config.cadenceSeconds) {
            context.logger.info("retrigger.skipped", ["reason": .of(skip)])
            switch skip {
            case .disabled: return .skipped("disabled")
            case .cadence: return .skipped("cadence")
            case .backoff: return .skipped("backoff")
            case .subscriptionInactive: return .skipped("subscription-inactive")
            case .watcherPending: return .skipped("watcher-pending")
            }
        }

        let syncthing = SyncthingClient(endpoint: config.syncthing)
        let check: (myID: String, report: StalePeerCheck.Report)
        do {
            check = try StalePeerCheck.run(client: syncthing, watched: config.watchedFolders) { context.progress(done: $0, total: $1) }
        } catch { throw error.jobError }
        var counts = Counts()
        counts["peers_checked"] = check.report.peersChecked
        counts["peers_behind"] = check.report.peersBehind
        counts["folders_checked"] = check.report.foldersChecked
        counts["folders_unavailable"] = check.report.foldersUnavailable
        counts["paused_devices"] = check.report.pausedDevices
        counts["paused_folders"] = check.report.pausedFolders

        guard check.report.peersBehind > 0 else {
            if !context.dryRun { try state.inSync(now: now).save(db) }
            counts["triggered"] = 0
            return .completed(counts)
        }
        if context.dryRun {
            counts["would_trigger"] = 1
            return .completed(counts)
        }

        let sender = TriggerSender(relay: RelayClient(baseURL: config.relayURL, caFile: context.env("RELAY_CA_FILE")),
                                   configPath: config.syncthing.configPath, cadenceSeconds: config.cadenceSeconds, database: db)
        var answer = RelayAnswer.transient
        var tries = 0
        while tries < Self.maxTries {
            if tries > 0 {
                try context.checkCancellation()
                Thread.sleep(forTimeInterval: TriggerSender.retryPause(attempt: tries, base: Self.retryBaseSeconds, cap: 60))
            }
            tries += 1
            let sent = try sender.send(deviceID: check.myID, now: context.now, logger: context.logger, attempt: tries)
            answer = sent.answer
            counts["authenticated"] = sent.authenticated ? 1 : 0
            if !TriggerSender.reaction(to: answer, now: now).isRetry { break }
        }
        counts["tries"] = tries
        try state.after(answer, now: now, cadenceSeconds: config.cadenceSeconds).save(db)

        switch answer {
        case .sent:
            counts["triggered"] = 1
            return .completed(counts)
        case .subscriptionInactive:
            context.logger.warn("relay.subscription_inactive")
            counts["subscription_inactive"] = 1
            return .completed(counts)
        case .rateLimited:
            context.logger.warn("relay.rate_limited")
            counts["rate_limited"] = 1
            return .completed(counts)
        case .notFound:
            throw TriggerSender.notFoundError
        case .transient:
            throw JobError.transient("relay-unavailable", "the relay did not accept the trigger after \(tries) tries; later passes wait for the stored back-off")
        }
    }
}
