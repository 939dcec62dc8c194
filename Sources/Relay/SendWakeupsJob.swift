import Cryptography
import HTTPClient
import Runner
import Store

/// `send-wakeups`: turns observed triggers into silent APNs pushes.
///
/// One pass: every Device ID with a trigger observed since its last push (and not pushed in the last 30 s)
/// gets a silent background push on each of its tokens, plus every token whose last push must be retried
/// (429, 5xx, no answer). All pushes of an environment go as streams of one multiplexed HTTP/2 connection.
/// Each answer is recorded on its token (latest result only); `clean-tokens` acts on dead ones later.
/// `ExpiredProviderToken` re-mints the provider JWT once (if the cached one is at least 20 minutes old)
/// and re-sends those pushes. A pass killed after sending and before recording sends again next time:
/// wake-ups are at-least-once, and a duplicate silent push is harmless.
struct SendWakeupsJob: Job {
    let name = "send-wakeups"
    let summary = "send silent APNs pushes for triggered Device IDs (30 s debounce), record each token's answer"
    let schedule = Schedule.every(minutes: 1, randomizedDelaySeconds: 5)
    var environmentKeys: [(name: String, help: String)] { APNsConfiguration.environmentKeys }
    let credentials = ["apns-key"]

    /// Upper bound of Device IDs handled in one pass; the rest wait for the next.
    static let maxDevicesPerPass = 50_000
    /// Streams in flight on the connection (APNs allows up to 1,000).
    static let maxConcurrentStreams = 500
    /// Rows updated per write transaction (DESIGN §4).
    static let batchSize = 1000

    /// One token to push.
    struct Target {
        let tokenRow: Int64
        let token: String
        let environment: APNsEnvironment
    }

    func run(_ context: JobContext) throws -> JobResult {
        let config = try APNsConfiguration(environment: context.env)
        let registry = try Registry(context)
        let db = context.database
        let now = context.nowMilliseconds
        var counts = Counts()

        // 1. The work: due devices (their triggers are consumed) and tokens awaiting a retry.
        let (dueDevices, rows) = try db.read { db -> ([Int64], [(Int64, [UInt8], String)]) in
            let window = now - WakeupDebounce.windowMilliseconds
            let devices: [Int64] = try db.query("SELECT d.id FROM relay_devices d WHERE \(WakeupDebounce.dueSQL) ORDER BY d.id LIMIT \(Self.maxDevicesPerPass)",
                                                [window]).map { try $0.get(0) }
            var rows: [(Int64, [UInt8], String)] = []
            var seen = Set<Int64>()
            try db.forEachRow("""
                SELECT id, token_sealed, environment FROM relay_tokens WHERE device_id IN (
                    SELECT d.id FROM relay_devices d WHERE \(WakeupDebounce.dueSQL) ORDER BY d.id LIMIT \(Self.maxDevicesPerPass))
                ORDER BY id
                """, [window]) { row in
                let id: Int64 = try row.get(0)
                seen.insert(id)
                rows.append((id, try row.get(1), try row.get(2)))
            }
            for row in try db.query("SELECT id, token_sealed, environment FROM relay_tokens WHERE retry_due = 1") {
                let id: Int64 = try row.get(0)
                if seen.insert(id).inserted { rows.append((id, try row.get(1), try row.get(2))) }
            }
            return (devices, rows)
        }
        counts["devices"] = dueDevices.count
        counts["pushes"] = rows.count
        if context.dryRun { return .completed(counts) }
        if rows.isEmpty && dueDevices.isEmpty { return .completed(counts) }

        var targets: [Target] = []
        targets.reserveCapacity(rows.count)
        var unreadable = 0
        for (id, sealed, environment) in rows {
            guard let opened = try? registry.keyring.open(sealed, purpose: Registry.tokenPurpose),
                  let env = APNsEnvironment(rawValue: environment) else { unreadable += 1; continue }
            targets.append(Target(tokenRow: id, token: String(decoding: opened.copyBytes(), as: UTF8.self), environment: env))
        }
        if unreadable > 0 { counts["unreadable"] = unreadable }

        // 2. Send: one HTTP/2 connection per environment, every push a stream on it.
        var provider = try ProviderToken.current(db, config: config, keyring: registry.keyring, now: now)
        counts["provider_token_minted"] = provider.minted ? 1 : 0
        let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 10, totalTimeout: 60, maxResponseBodyBytes: 4096,
                                                           httpVersion: .http2, tls: TLSOptions(caFile: config.caFile)))
        let isCancelled = { (try? context.checkCancellation()) == nil }
        var results = send(targets, jwt: provider.jwt, config: config, client: client, now: now, logger: context.logger, isCancelled: isCancelled)

        let expired = results.indices.filter { results[$0].action == .remintProviderToken }
        if !expired.isEmpty {
            let renewed = try ProviderToken.current(db, config: config, keyring: registry.keyring, now: now, rejectedAsExpired: true)
            if renewed.minted {
                provider = renewed
                counts["provider_token_reminted"] = 1
                context.logger.info("apns.provider_token_reminted", ["pushes": .int(expired.count)])
                let again = send(expired.map { targets[$0] }, jwt: provider.jwt, config: config, client: client, now: now, logger: context.logger,
                                 isCancelled: isCancelled)
                for (offset, index) in expired.enumerated() { results[index] = again[offset] }
            } else {
                context.logger.warn("apns.provider_token_remint_deferred", ["pushes": .int(expired.count)])
            }
        }

        try context.checkCancellation()
        // 3. Record each token's answer and consume the devices' triggers, in bounded transactions.
        for start in stride(from: 0, to: targets.count, by: Self.batchSize) {
            try context.checkCancellation()
            let end = min(start + Self.batchSize, targets.count)
            try db.write { db in
                for index in start..<end {
                    let result = results[index]
                    let retry = [.retryNextPass, .remintProviderToken, .configuration].contains(result.action) ? 1 : 0
                    if let status = result.status {
                        try db.execute("""
                            UPDATE relay_tokens SET result_status = ?, result_reason = ?, result_at = ?, invalidated_at = ?, retry_due = ? WHERE id = ?
                            """, [status, result.reason, now, result.invalidatedAt, retry, targets[index].tokenRow])
                    } else {
                        try db.execute("UPDATE relay_tokens SET retry_due = 1 WHERE id = ?", [targets[index].tokenRow])
                    }
                }
            }
        }
        for start in stride(from: 0, to: dueDevices.count, by: Self.batchSize) {
            try context.checkCancellation()
            try db.write { db in
                for device in dueDevices[start..<min(start + Self.batchSize, dueDevices.count)] {
                    try db.execute("UPDATE relay_devices SET last_push_at = ? WHERE id = ?", [now, device])
                }
            }
        }

        var tally: [APNsResponseAction: Int] = [:]
        var transport = 0
        for result in results {
            tally[result.action, default: 0] += 1
            if result.status == nil { transport += 1 }
        }
        counts["delivered"] = tally[.delivered] ?? 0
        counts["invalid"] = tally[.invalidToken] ?? 0
        counts["retry"] = (tally[.retryNextPass] ?? 0) + (tally[.remintProviderToken] ?? 0)
        counts["rejected"] = tally[.rejected] ?? 0
        counts["configuration"] = tally[.configuration] ?? 0
        counts["transport_failures"] = transport

        if (tally[.configuration] ?? 0) > 0 {
            throw JobError.configuration("apns-refused", "APNs refused the provider key, topic or endpoint; check the APNS_* settings (the pushes are retried next pass)")
        }
        if !targets.isEmpty && transport == targets.count {
            throw JobError.transient("apns-unreachable", "APNs could not be reached; the pushes are retried next pass")
        }
        if !rows.isEmpty && targets.isEmpty {
            throw JobError.configuration("store-key", "no registered token could be opened with this store key")
        }
        return .completed(counts)
    }

    /// Sends `targets` (grouped by environment, one multiplexed connection each); results in `targets` order.
    private func send(_ targets: [Target], jwt: String, config: APNsConfiguration, client: HTTPClient, now: Int64, logger: Logger,
                      isCancelled: @escaping () -> Bool) -> [APNsPush.Result] {
        var results = [APNsPush.Result?](repeating: nil, count: targets.count)
        for environment in APNsEnvironment.allCases {
            let indices = targets.indices.filter { targets[$0].environment == environment }
            guard !indices.isEmpty else { continue }
            let base = config.baseURL(for: environment)
            let requests = indices.map { APNsPush.request(baseURL: base, token: targets[$0].token, jwt: jwt, topic: config.topic, nowMilliseconds: now) }
            // SIGTERM stops handing out new pushes; the pass then ends with 75 before recording, and the next
            // pass sends these Device IDs again (at-least-once).
            let outcome = client.batchWithStatistics(requests, maxConcurrentStreams: Self.maxConcurrentStreams, isCancelled: isCancelled)
            for (offset, index) in indices.enumerated() { results[index] = APNsPush.result(outcome.results[offset]) }
            logger.info("apns.batch", ["environment": .of(environment), "pushes": .int(indices.count), "connections": .int(outcome.connectionsOpened)])
        }
        return results.map { $0! }
    }
}

extension APNsResponseAction: Hashable {}
