import Cryptography
import Foundation
import HTTPClient
import Runner
import Store

/// `send-wakeups`: turns observed triggers into silent APNs pushes.
///
/// One pass: every Device ID with a trigger observed outside the 30 s window after its last push (`WakeupDebounce`)
/// gets a silent background push on each of its live tokens, plus every token whose last push must be retried
/// (429, 5xx, no answer). A token is skipped when it is dead (its answer said `BadDeviceToken`,
/// `DeviceTokenNotForTopic`, `Unregistered`, `ExpiredToken` or `PayloadTooLarge` — the `clean-tokens` rule) or
/// when it already has an answer for the Device ID's latest trigger (a pass stopped part-way leaves those).
/// All pushes of an environment go as streams of one multiplexed HTTP/2 connection.
///
/// Each answer is recorded on its token as it arrives (latest result only), in small transactions, so a pass
/// stopped anywhere keeps every answer it received. SIGTERM stops handing out new pushes, waits for the ones in
/// flight (bounded by the 60 s request timeout, inside systemd's default 90 s stop timeout), records them,
/// releases the stamps of the pushes never sent, and exits 75. `ExpiredProviderToken` re-mints the provider JWT
/// once (if the cached one is at least 20 minutes old) and re-sends those pushes. A per-token refusal never
/// fails the pass; only answers that condemn the provider credential or topic do (78), after everything was
/// recorded and counted. Each token is claimed (stamped `sent_at`, the claim's end) before its push leaves and the
/// claim is renewed right before each batch of pushes is handed to APNs; a claim another pass took meanwhile is
/// not sent (`claims_lost`). A pass killed (SIGKILL) after sending and before recording sends again once the 30 s
/// window after the claim's end has passed, never within it (`WakeupClaim`, `WakeupDebounce`). Stored times ahead
/// of the clock are repaired first (`StoredClock`).
struct SendWakeupsJob: Job {
    let runsOnPostgreSQL = true
    /// On PostgreSQL several passes (on several hosts) run at once and split the due Device IDs (`WakeupClaim`).
    let passesShareWork = true
    let name = "send-wakeups"
    let libraries: [LazyLibrary] = [.curl]
    let summary = "send silent APNs pushes for triggered Device IDs (30 s debounce), record each token's answer"
    let schedule = Schedule.every(minutes: 1, randomizedDelaySeconds: 5)
    var environmentKeys: [(name: String, help: String)] { APNsConfiguration.environmentKeys + [WakeupDebounce.trailingPushKey] }
    let credentials = ["apns-key"]

    /// Upper bound of Device IDs handled in one pass; the rest wait for the next.
    static let maxDevicesPerPass = 50_000
    /// Streams in flight on the connection (APNs allows up to 1,000).
    static let maxConcurrentStreams = 500
    /// Rows updated per write transaction (docs/design.md §4).
    static let batchSize = 1000

    /// One token to push.
    struct Target {
        let tokenRow: Int64
        let token: String
        let environment: APNsEnvironment
        /// The Device ID row it belongs to.
        let device: Int64
        /// Its `sent_at` before this pass stamped it (restored when the push is never sent).
        let previousSentAt: Int64?
        /// The stamp this pass's claim wrote: the claim's end.
        let stamp: Int64
    }

    func run(_ context: JobContext) throws -> JobResult {
        let config = try APNsConfiguration(environment: context.env)
        let trailingPush = try WakeupDebounce.trailingPush(context.env)
        let registry = try Registry(context)
        let db = context.database
        let now = context.nowMilliseconds
        // The clock as it moves on during the pass (claims, renewals and answers carry their own time; `--now` keeps it still).
        let clock = { context.nowMilliseconds }
        var counts = Counts()

        // 0. A clock that went backwards: stored times in the future are treated as now (and stored as now).
        if !context.dryRun, try StoredClock.clampRelay(db, now: now, checkCancellation: context.checkCancellation) > 0 {
            context.logger.warn("clock.stored_time_in_future")
        }

        // 1. A dry run counts what a pass would claim, changing nothing.
        if context.dryRun {
            let (devices, pushes) = try preview(db, now: now, trailingPush: trailingPush)
            counts["devices"] = devices
            counts["pushes"] = pushes
            return .completed(counts)
        }

        // 2. Claim the work, each token stamped before any push leaves.
        let work = try claim(context, keyring: registry.keyring, now: now, clock: clock, trailingPush: trailingPush)
        counts["devices"] = work.dueDevices.count
        counts["pushes"] = work.targets.count + work.unreadable
        if work.unreadable > 0 { counts["unreadable"] = work.unreadable }
        if work.targets.isEmpty && work.dueDevices.isEmpty && work.unreadable == 0 { return .completed(counts) }
        let recorder = AnswerRecorder(database: db, targets: work.targets, now: now, clock: clock, elapsed: context.monotonic)

        // 3. Send, every answer recorded as it arrives.
        let results = try sendAll(work.targets, context: context, config: config, keyring: registry.keyring, now: now, clock: clock,
                                  recorder: recorder, counts: &counts)
        try recorder.flush()
        let tally = Tally(results)
        tally.count(into: &counts)
        // Whatever happens next, the ledger reports what was sent and recorded.
        context.committed = counts

        if let failure = recorder.failure { throw failure }
        if tally.notSent > 0 {
            // Stopped part-way: the answers received are recorded; the triggers stay for the rerun, which pushes
            // only the tokens still without an answer (after the debounce window).
            throw JobError.cancelled
        }

        // 4. Consume the triggers the pushes served.
        try consumeTriggers(work, results: results, context: context, now: now, trailingPush: trailingPush)

        if (tally.actions[.configuration] ?? 0) > 0 {
            throw JobError.configuration("apns-refused", "APNs refused the provider key, topic or endpoint; check the APNS_* settings (those pushes are retried next pass)")
        }
        if !work.targets.isEmpty && tally.transport == work.targets.count {
            throw JobError.transient("apns-unreachable", "APNs could not be reached; the pushes are retried next pass")
        }
        if work.unreadable > 0 && work.targets.isEmpty {
            throw JobError.configuration("store-key", "no registered token could be opened with this store key")
        }
        return .completed(counts)
    }

    /// What one pass claimed: the due Device IDs, the trigger time each claim saw, the tokens to push, and how many
    /// tokens could not be opened with the store key.
    struct Work {
        var dueDevices: [Int64] = []
        var seenTriggers: [Int64: Int64] = [:]
        var targets: [Target] = []
        var unreadable = 0
    }

    /// Claims the work in batches — due Device IDs with the live tokens not yet answered for their latest trigger,
    /// then tokens to retry — each token stamped as it is claimed, committed before the first push leaves, so a pass
    /// killed from here on cannot make a rerun (or a pass on another host) push these tokens again within the
    /// debounce window (`WakeupClaim`). Stopped while claiming, the stamps are released again: nothing was sent.
    private func claim(_ context: JobContext, keyring: StoreKeyring, now: Int64, clock: @escaping () -> Int64, trailingPush: Bool) throws -> Work {
        let db = context.database
        var work = Work()
        func claimed(_ claim: WakeupClaim) throws {
            if (try? context.checkCancellation()) == nil {
                try AnswerRecorder(database: db, targets: work.targets + claim.targets, now: now, clock: clock, elapsed: context.monotonic)
                    .releaseStamps((work.targets + claim.targets).indices)
                throw JobError.cancelled
            }
            work.dueDevices += claim.devices
            work.seenTriggers.merge(claim.seenTriggers) { $1 }
            work.targets += claim.targets
            work.unreadable += claim.unreadable
        }
        var afterDevice: Int64 = 0
        while work.dueDevices.count < Self.maxDevicesPerPass {
            let claim = try WakeupClaim.devices(db, keyring: keyring, claimedAt: clock(), after: afterDevice,
                                                limit: min(Self.batchSize, Self.maxDevicesPerPass - work.dueDevices.count), trailingPush: trailingPush)
            try claimed(claim)
            guard let last = claim.lastScanned else { break }
            afterDevice = last
        }
        var afterToken: Int64 = 0
        while true {
            let (claim, last) = try WakeupClaim.retries(db, keyring: keyring, claimedAt: clock(), after: afterToken, limit: Self.batchSize)
            try claimed(claim)
            guard let last else { break }
            afterToken = last
        }
        return work
    }

    /// Sends every target: one HTTP/2 connection per environment, every push a stream on it, every answer recorded
    /// as it arrives; pushes refused with `ExpiredProviderToken` are sent once more with a re-minted provider token.
    /// (Due Device IDs whose tokens are all dead or already answered need no push and no provider token.)
    private func sendAll(_ targets: [Target], context: JobContext, config: APNsConfiguration, keyring: StoreKeyring, now: Int64,
                         clock: @escaping () -> Int64, recorder: AnswerRecorder, counts: inout Counts) throws -> [Outcome] {
        let db = context.database
        let isCancelled = { (try? context.checkCancellation()) == nil || recorder.failure != nil }
        var results: [Outcome] = []
        var provider: (jwt: String, mintedAt: Int64, minted: Bool) = ("", 0, false)
        let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 10, totalTimeout: 60, maxResponseBodyBytes: 4096,
                                                           httpVersion: .http2, tls: TLSOptions(caFile: config.caFile)))
        // Answers received (a re-sent push counts again), of the pushes this pass sends.
        var answers = 0
        let answered = { answers += 1; context.progress(done: answers, total: max(targets.count, answers)) }
        if !targets.isEmpty {
            provider = try ProviderToken.current(db, config: config, keyring: keyring, now: now)
            results = try send(targets.indices.map { $0 }, targets: targets, jwt: provider.jwt, config: config, client: client, now: now,
                               clock: clock, logger: context.logger, isCancelled: isCancelled, recorder: recorder, answered: answered)
        }
        counts["provider_token_minted"] = provider.minted ? 1 : 0

        let expired = results.indices.filter { results[$0].sent && results[$0].push.action == .remintProviderToken }
        if !expired.isEmpty && !isCancelled() {
            let renewed = try ProviderToken.current(db, config: config, keyring: keyring, now: now, rejectedAsExpired: true)
            if renewed.minted {
                provider = renewed
                counts["provider_token_reminted"] = 1
                context.logger.info("apns.provider_token_reminted", ["pushes": .int(expired.count)])
                let again = try send(expired, targets: targets, jwt: provider.jwt, config: config, client: client, now: now, clock: clock,
                                     logger: context.logger, isCancelled: isCancelled, recorder: recorder, answered: answered)
                for (offset, index) in expired.enumerated() where again[offset].sent { results[index] = again[offset] }
            } else {
                context.logger.warn("apns.provider_token_remint_deferred", ["pushes": .int(expired.count)])
            }
        }
        return results
    }

    /// The pushes' fates, summed: APNs' answers by action, transport failures, pushes never sent, claims lost.
    struct Tally {
        var actions: [APNsResponseAction: Int] = [:]
        var transport = 0, notSent = 0, lost = 0

        init(_ results: [Outcome]) {
            for result in results {
                if result.claimLost { lost += 1; continue }
                guard result.sent else { notSent += 1; continue }
                actions[result.push.action, default: 0] += 1
                if result.push.status == nil { transport += 1 }
            }
        }

        /// The pass's counts of them.
        func count(into counts: inout Counts) {
            counts["delivered"] = actions[.delivered] ?? 0
            counts["invalid"] = actions[.invalidToken] ?? 0
            counts["retry"] = (actions[.retryNextPass] ?? 0) + (actions[.remintProviderToken] ?? 0)
            counts["rejected"] = actions[.rejected] ?? 0
            counts["configuration"] = actions[.configuration] ?? 0
            counts["transport_failures"] = transport
            if notSent > 0 { counts["not_sent"] = notSent }
            if lost > 0 { counts["claims_lost"] = lost }
        }
    }

    /// Consumes the devices' triggers, in bounded transactions: the trigger the claim saw (one recorded since stays
    /// pending: its clock may read earlier than ours, and this pass may not have pushed its Device ID)… and, unless
    /// the trailing push is on, one recorded since for a Device ID whose every live token this pass pushed: those
    /// pushes left after the claim, so they serve it or it falls in their window (`WakeupDebounce`,
    /// docs/roles/relay.md "A trigger during a pass"). A Device ID this pass pushed only retries to is consumed by the same
    /// rule (trailing push off): when the retries reached every one of its live tokens they are its push, and a
    /// trigger in their window is debounced (docs/roles/relay.md, "A retry push").
    private func consumeTriggers(_ work: Work, results: [Outcome], context: JobContext, now: Int64, trailingPush: Bool) throws {
        var pushed: [Int64: [Int64]] = [:]
        var unserved = Set<Int64>()
        for (index, result) in results.enumerated() {
            // A push counts once APNs answered it: one without an answer (a transport failure) may never have left, and
            // a push time is only ever the clock of a pass that pushed (`RelayRows.consumeTriggers`).
            if result.sent && result.push.status != nil {
                pushed[work.targets[index].device, default: []].append(work.targets[index].tokenRow)
            } else {
                unserved.insert(work.targets[index].device)
            }
        }
        // The due Device IDs, then (trailing push off) those this pass pushed only retries to. Only a due one's seen
        // trigger is consumed as seen: a Device ID the claim saw due but gave up on (a token of it skipped as locked
        // on PostgreSQL) keeps its trigger in `work.seenTriggers`, and consuming that would drop the skipped token's
        // push; a retried-only one is consumed by the served rule alone.
        let due = Set(work.dueDevices)
        let retriedOnly = trailingPush ? [] : pushed.keys.filter { !due.contains($0) && !unserved.contains($0) }.sorted()
        let devices = work.dueDevices + retriedOnly
        for start in stride(from: 0, to: devices.count, by: Self.batchSize) {
            try context.checkCancellation()
            let batch = devices[start..<min(start + Self.batchSize, devices.count)]
            let seen = batch.compactMap { device in
                due.contains(device) ? work.seenTriggers[device].map { (id: device, seenTrigger: $0, pushed: pushed[device] != nil) } : nil
            }
            let served = trailingPush ? [] : batch.filter { pushed[$0] != nil && !unserved.contains($0) }
            try context.database.write { db in
                try RelayRows.consumeTriggers(db, devices: seen, at: now)
                try RelayRows.consumeTriggersServed(db, devices: served, pushedTokens: served.flatMap { pushed[$0] ?? [] }, at: now)
            }
        }
    }

    /// What a pass would claim now: due Device IDs (up to the per-pass bound) and the pushes for them and for
    /// retries, read in one snapshot.
    private func preview(_ db: Database, now: Int64, trailingPush: Bool) throws -> (devices: Int, pushes: Int) {
        try db.read { db in
            let window = now - WakeupDebounce.windowMilliseconds
            let due = "SELECT d.id FROM relay_devices d WHERE \(WakeupDebounce.dueSQL(trailingPush: trailingPush)) ORDER BY d.id LIMIT \(Self.maxDevicesPerPass)"
            let devices: Int = try db.scalar("SELECT count(*) FROM (\(due)) due", [window, window]) ?? 0
            let pushes: Int = try db.scalar("""
                SELECT count(*) FROM relay_tokens t JOIN relay_devices dd ON dd.id = t.device_id
                WHERE NOT \(TokenCleanup.deadSQL("t")) AND \(WakeupDebounce.mayPushSQL("t")) AND (
                    (t.device_id IN (\(due)) AND NOT (t.retry_due = 0 AND t.result_at IS NOT NULL AND t.result_at >= dd.last_trigger_at))
                    OR t.retry_due = 1)
                """, [window, window, window]) ?? 0
            return (devices, pushes)
        }
    }

    /// One push's fate: `sent` false when it was never handed to APNs (the pass was stopped first, or its claim
    /// was lost: `claimLost`, another pass holds the token).
    struct Outcome {
        var push: APNsPush.Result
        var sent: Bool
        var claimLost = false
    }

    /// Sends the targets at `selected` (grouped by environment, one multiplexed connection each), recording each
    /// answer through `recorder` (and `answered`, for progress) as it arrives; results in `selected` order. The
    /// claims are renewed right before they leave, `maxConcurrentStreams` at a time (`renewClaims`); a push whose
    /// claim was lost is not sent.
    private func send(_ selected: [Int], targets: [Target], jwt: String, config: APNsConfiguration, client: HTTPClient, now: Int64,
                      clock: @escaping () -> Int64, logger: Logger, isCancelled: @escaping () -> Bool, recorder: AnswerRecorder,
                      answered: @escaping () -> Void) throws -> [Outcome] {
        var results = [Outcome?](repeating: nil, count: selected.count)
        for environment in APNsEnvironment.allCases {
            let positions = selected.indices.filter { targets[selected[$0]].environment == environment }
            guard !positions.isEmpty else { continue }
            let base = config.baseURL(for: environment)
            var held = Set<Int>(), lost = Set<Int>()
            var renewalFailure: Error?
            let mayStart = { (offset: Int) -> Bool in
                if offset % Self.maxConcurrentStreams == 0 && renewalFailure == nil {
                    let group = positions[offset..<min(offset + Self.maxConcurrentStreams, positions.count)].map { selected[$0] }
                    do {
                        let kept = try self.renewClaims(group, targets: targets, clock: clock, recorder: recorder)
                        held.formUnion(kept)
                        lost.formUnion(Set(group).subtracting(kept))
                    } catch {
                        renewalFailure = error
                    }
                }
                return held.contains(selected[positions[offset]])
            }
            // Each request is built when a stream is free for it and each answer is reduced to its outcome as it
            // arrives: the pass holds neither every request nor every response.
            let connections = client.stream(count: positions.count, maxConcurrentStreams: Self.maxConcurrentStreams,
                                            isCancelled: { renewalFailure != nil || isCancelled() }, mayStart: mayStart,
                                            startWithin: Double(WakeupClaim.sendMarginMilliseconds) / 1000,
                                            request: { offset in
                APNsPush.request(baseURL: base, token: targets[selected[positions[offset]]].token, jwt: jwt, topic: config.topic, nowMilliseconds: now)
            }) { offset, answer in
                let target = selected[positions[offset]]
                let push = APNsPush.result(answer)
                recorder.record(target: target, push, sent: !answer.isCancelled)
                if lost.contains(target) {
                    results[positions[offset]] = Outcome(push: push, sent: false, claimLost: true)
                } else if answer.isCancelled {
                    results[positions[offset]] = Outcome(push: push, sent: false)
                } else {
                    results[positions[offset]] = Outcome(push: push, sent: true)
                    answered()
                }
            }
            logger.info("apns.batch", ["environment": .of(environment), "pushes": .int(positions.count), "connections": .int(connections)])
            if let renewalFailure { throw renewalFailure }
        }
        return results.map { $0! }
    }

    /// Renews this pass's claims on `indices` (targets) right before their pushes leave: the answers queued so far
    /// are written first (their stamps are the ones held), then one compare-and-set per stamp. Returns the targets
    /// still held; a lost one is not sent (another pass took its token). A held push must start within
    /// `WakeupClaim.sendMarginMilliseconds` of the renewal or is abandoned unsent (a transport failure, retried).
    private func renewClaims(_ indices: [Int], targets: [Target], clock: () -> Int64, recorder: AnswerRecorder) throws -> Set<Int> {
        try recorder.flush()
        let renewedAt = clock()
        var byStamp: [Int64: [Int]] = [:]
        for index in indices { if let stamp = recorder.stamps[index] { byStamp[stamp, default: []].append(index) } }
        var held = Set<Int>()
        for (stamp, group) in byStamp {
            let rows = try WakeupClaim.renew(recorder.database, rows: group.map { targets[$0].tokenRow }, stamp: stamp, renewedAt: renewedAt)
            for index in group {
                if rows.contains(targets[index].tokenRow) {
                    recorder.held(index, stamp: renewedAt + WakeupClaim.claimMilliseconds)
                    held.insert(index)
                } else {
                    recorder.held(index, stamp: nil)
                }
            }
        }
        return held
    }
}

extension APNsResponseAction: Hashable {}

extension Result where Failure == HTTPError {
    /// The request was never handed to APNs (the pass was stopped first, or its claim was lost).
    var isCancelled: Bool {
        if case .failure(.cancelled) = self { return true }
        return false
    }
}
