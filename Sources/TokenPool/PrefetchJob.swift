import Cryptography
import Foundation
import Runner

/// `prefetch`: plays the native fetcher (WorkManager / iOS background task) for the injected day (docs/protocols/jwt-pool.md §1, §3).
///
/// Picks `pool[epochDay % pool.count]` — no record of mint time, exactly the native selector — and calls
/// Endorser's New Activity endpoint with it as the Bearer token. A day outside the pool's covered range, or an
/// empty pool, has no credential: the pass records `no-credential`, sends nothing and fails with 78 (an operator
/// alerts on it; the next mint-pool fixes it). Signed out or with a passkey identity it skips; after a 429/503 with
/// `Retry-After` it skips (`retry-after`) until that instant has passed. Every outcome is
/// recorded in `token_pool_fetches` and, through the pass's counts or failure category, in `job status`.
struct PrefetchJob: Job {
    let name = "prefetch"
    let libraries: [LazyLibrary] = [.curl]
    let summary = "emulate the native fetcher: pick pool[epochDay % size] and ask Endorser for New Activity"
    let schedule = Schedule.hourly(atMinute: 20)
    let environmentKeys: [(name: String, help: String)] = [("ENDORSER_URL", "base URL of the Endorser server (https://…)")]
    let settingKeys = [TokenPoolSettings.afterID, TokenPoolSettings.planIDs]

    func run(_ context: JobContext) throws -> JobResult {
        let (baseURL, afterID) = try Self.configuration(context)
        let nowSeconds = PoolCalendar.floorDivide(context.nowMilliseconds, 1000)
        let today = PoolCalendar.epochDay(unixSeconds: nowSeconds)
        let log = FetchLog(database: context.database)
        if let skipped = try Self.skipped(context, log: log) { return skipped }

        guard let (slot, record, live) = try Self.select(today, database: context.database) else {
            if !context.dryRun {
                try log.record(.init(fetchedAt: context.nowMilliseconds, day: today, slot: nil, outcome: "no-credential", httpStatus: nil, rows: nil, hitLimit: nil))
            }
            context.logger.warn("prefetch.no_credential")
            if context.dryRun { return .skipped("no-credential", details: [("day", .string(PoolCalendar.dateString(ofDay: today)))]) }
            throw TokenPoolErrors.noCredential
        }
        let window: [(String, JSON)] = [
            ("day", .string(PoolCalendar.dateString(ofDay: today))), ("slot", .number(slot)),
            ("nbf", .string(Date(timeIntervalSince1970: Double(record.window.notBefore)).rfc3339)),
            ("exp", .string(Date(timeIntervalSince1970: Double(record.window.expires)).rfc3339)),
        ]
        if context.dryRun {
            return .completed(["would_request": 1], details: window)
        }

        let keyring = try context.keyring()
        // A round that hit Endorser's limit pages on (beforeId) in this pass; otherwise ask after the newest row kept.
        let activity = ActivityStore(database: context.database)
        let cursor = try activity.cursor(afterID: afterID)
        let request = PrefetchRequest(planIDsSetting: try context.settings.string(TokenPoolSettings.planIDs), afterID: cursor.afterID, beforeID: cursor.beforeID)
        let token = try Self.openToken(record, of: live, keyring: keyring, logger: context.logger)

        let (outcome, rows) = EndorserClient().prefetch(baseURL: baseURL, token: token, request: request, now: Date(unixMilliseconds: context.nowMilliseconds))
        // On failure too, the ledger (and so `job status`) keeps the HTTP status (0: no answer).
        context.committed = ["http_status": outcome.httpStatus ?? 0]
        let at = context.nowMilliseconds
        let fetch = { (outcome: String, status: Int?) in FetchLog.Entry(fetchedAt: at, day: today, slot: slot, outcome: outcome, httpStatus: status, rows: nil, hitLimit: nil) }
        switch outcome {
        case .fetched(let status, let count, let hitLimit):
            let next = cursor.advanced(jwtIDs: rows.compactMap(\.jwtID), hitLimit: hitLimit)
            let kept = try activity.keep(rows, cursor: next, previous: cursor, settings: context.settings, keyring: keyring, now: at)
            try log.record(.init(fetchedAt: at, day: today, slot: slot, outcome: "ok", httpStatus: status, rows: count, hitLimit: hitLimit))
            context.logger.info("prefetch.fetched", ["status": .int(status), "rows": .int(count), "hit_limit": .bool(hitLimit), "kept": .int(kept),
                                                      "paging": .bool(next.beforeID != nil)])
            return .completed(["http_status": status, "rows": count, "hit_limit": hitLimit ? 1 : 0, "kept": kept, "paging": next.beforeID != nil ? 1 : 0],
                              details: window)
        case .credentialRejected(let status):
            try log.record(fetch("credential-rejected", status))
            context.logger.warn("prefetch.credential_rejected", ["status": .int(status)])
            throw JobError.badInput("credential-rejected", "Endorser refused the pool's token for today (JWT verification failed); mint the pool again")
        case .refused(let status):
            try log.record(fetch("refused", status))
            context.logger.warn("prefetch.refused", ["status": .int(status)])
            throw JobError.badInput("endorser-refused", "Endorser refused the prefetch request with HTTP \(status)")
        case .transient(let status):
            try log.record(fetch("transient", status))
            context.logger.warn("prefetch.transient", ["status": .int(status ?? 0)])
            throw JobError.transient("endorser-unavailable", status.map { "Endorser answered HTTP \($0); the next pass retries" }
                                         ?? "Endorser could not be reached; the next pass retries")
        case .backOff(let status, let seconds):
            let until = at + seconds * 1000
            try log.record(.init(fetchedAt: at, day: today, slot: slot, outcome: "transient", httpStatus: status, rows: nil, hitLimit: nil, retryNotBefore: until))
            context.logger.warn("prefetch.back_off", ["status": .int(status), "seconds": .int(seconds)])
            throw JobError.transient("endorser-unavailable", "Endorser answered HTTP \(status) and asked for no request for \(seconds) s; passes before then send nothing")
        case .badResponse(let status):
            try log.record(fetch("bad-response", status))
            context.logger.warn("prefetch.bad_response", ["status": .int(status ?? 0)])
            throw JobError.badInput("endorser-bad-response", "Endorser's answer was not the documented {data, hitLimit} object")
        case .invalidURL:
            throw TokenPoolErrors.endorserURLInvalid
        }
    }

    /// Endorser's base URL and the `prefetch.after-id` setting, or the configuration error (78) naming what to set.
    private static func configuration(_ context: JobContext) throws -> (baseURL: String, afterID: String) {
        guard let baseURL = context.env("ENDORSER_URL") else { throw TokenPoolErrors.endorserURLMissing }
        if let problem = EndorserURL.problem(baseURL) { throw problem }
        let afterID = try context.settings.string(TokenPoolSettings.afterID)
        guard !afterID.isEmpty else {
            throw JobError.configuration("after-id-missing", "prefetch.after-id is not set; set it with 'job settings set prefetch.after-id ULID'")
        }
        return (baseURL, afterID)
    }

    /// Why this pass sends nothing and is not a fault — signed out, a passkey identity, or Endorser's Retry-After
    /// not yet passed (honoured across passes) — or nil when it goes on.
    private static func skipped(_ context: JobContext, log: FetchLog) throws -> JobResult? {
        // Signed out, or a passkey identity: the app leaves prefetch unconfigured — nothing to do, not a fault.
        switch try IdentityStore(database: context.database).active()?.method {
        case nil: return .skipped("no-identity")
        case .peer: return .skipped("unsupported-identity")
        case .ethr: break
        }
        if let until = try log.backOff(after: context.nowMilliseconds) {
            context.logger.info("prefetch.backing_off")
            return .skipped("retry-after", details: [("retry_after", .string(Date(unixMilliseconds: until).rfc3339))])
        }
        return nil
    }

    /// The native selector, bounded by the covered range recorded with the pool: today's slot, its row and the pool
    /// it belongs to, or nil when today has no credential. One read snapshot, so a mint pass swapping pools in
    /// between cannot pair one pool's range with another's slot.
    private static func select(_ today: Int64, database: Database) throws -> (slot: Int, record: PoolStore.SlotRecord, live: PoolStore.LivePool)? {
        let pool = PoolStore(database: database)
        return try database.read { _ -> (slot: Int, record: PoolStore.SlotRecord, live: PoolStore.LivePool)? in
            guard let live = try pool.live(), let slot = live.plan.slot(forDay: today),
                  let record = try pool.slot(slot, of: live.generationID) else { return nil }
            return (slot, record, live)
        }
    }

    /// Today's token, opened with the store key; a legacy or altered row is a failure naming what to do.
    private static func openToken(_ record: PoolStore.SlotRecord, of live: PoolStore.LivePool, keyring: StoreKeyring, logger: Logger) throws -> String {
        do {
            return try PoolSealing.open(record, of: live, keyring: keyring)
        } catch .legacy {
            logger.warn("prefetch.pool_legacy")
            throw TokenPoolErrors.poolLegacy
        } catch .damaged {
            // The store key was checked when it was loaded: a row that does not open was moved or altered.
            logger.warn("prefetch.pool_damaged")
            throw TokenPoolErrors.poolDamaged
        }
    }
}
