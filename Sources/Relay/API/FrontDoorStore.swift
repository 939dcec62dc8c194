import Cryptography
import Runner
import Store

/// The store effects of the relay's HTTP API, each in one transaction: provisioning with its entitlement,
/// gated trigger observation, the status read, and per-Device-ID rate limits.
///
/// Identifiers go in only as blind indexes (Device IDs, original transaction ids) or sealed (tokens, original
/// transaction ids); nothing here ever returns one.
struct FrontDoorStore {
    static let originalPurpose = "relay.original-transaction-id"

    let database: Database
    let keyring: StoreKeyring

    var registry: Registry { Registry(database: database, keyring: keyring) }

    func originalIndex(_ id: String) -> [UInt8] { keyring.blindIndex(Array(id.utf8), purpose: Self.originalPurpose) }

    /// The stored entitlement of a Device ID (its `relay_devices.id`), if any.
    static func entitlement(_ db: Database, device: Int64) throws -> Entitlement? {
        guard let row = try db.queryOne("""
            SELECT kind, original_index, product_id, environment, signed_at, expires_at, revoked_at FROM relay_entitlements WHERE device_id = ?
            """, [device]) else { return nil }
        guard let kind = Entitlement.Kind(rawValue: try row.get(0)) else { return nil }
        return Entitlement(kind: kind, originalIndex: try row.get(1), productID: try row.get(2), environment: try row.get(3),
                           signedAt: try row.get(4), expiresAt: try row.get(5), revokedAt: try row.get(6))
    }

    /// Adds or refreshes `token` on `deviceID` (as `Registry.register`) inside `db`'s open transaction; returns the device row.
    /// With `maxTokens`, a new token beyond that many live ones on the Device ID replaces the ones registered longest
    /// ago (dead tokens, which are never pushed, do not count and are left to `clean-tokens`).
    private func upsertToken(_ db: Database, deviceID: String, token: String, environment: APNsEnvironment, maxTokens: Int? = nil,
                             now: Int64) throws -> (device: Int64, created: Bool) {
        let dIndex = registry.deviceIndex(deviceID)
        let tIndex = registry.tokenIndex(token)
        let sealed = try keyring.seal(Array(token.utf8), purpose: Registry.tokenPurpose)
        try db.execute("INSERT INTO relay_devices (device_index, created_at) VALUES (?, ?) ON CONFLICT (device_index) DO NOTHING", [dIndex, now])
        guard let device: Int64 = try db.scalar("SELECT id FROM relay_devices WHERE device_index = ?", [dIndex]) else {
            throw JobError.internal("the registration row vanished inside its transaction")
        }
        if let existing: Int64 = try db.scalar("SELECT id FROM relay_tokens WHERE device_id = ? AND token_index = ?", [device, tIndex]) {
            try db.execute("UPDATE relay_tokens SET registered_at = max(registered_at, ?), environment = ?, token_sealed = ? WHERE id = ?",
                           [now, environment.rawValue, sealed, existing])
            return (device, false)
        }
        if let maxTokens {
            try db.execute("""
                DELETE FROM relay_tokens WHERE device_id = ? AND NOT \(TokenCleanup.deadSQL()) AND id NOT IN (
                    SELECT id FROM relay_tokens WHERE device_id = ? AND NOT \(TokenCleanup.deadSQL())
                    ORDER BY registered_at DESC, id DESC LIMIT ?)
                """, [device, device, maxTokens - 1])
        }
        try db.execute("INSERT INTO relay_tokens (device_id, token_index, token_sealed, environment, registered_at) VALUES (?, ?, ?, ?, ?)",
                       [device, tIndex, sealed, environment.rawValue, now])
        return (device, true)
    }

    // MARK: Operator registrations (`job relay register`)

    /// `job relay register`: the token, and an operator entitlement (or a legacy one keyed by `legacyTransactionID`)
    /// unless the Device ID already holds a verified StoreKit one, which is kept.
    func registerByOperator(deviceID: String, token: String, environment: APNsEnvironment, expiresAt: Int64?, legacyTransactionID: String?,
                            now: Int64) throws -> (outcome: Registry.RegisterOutcome, kind: Entitlement.Kind) {
        let sealedOriginal = try legacyTransactionID.map { try keyring.seal(Array($0.utf8), purpose: Self.originalPurpose) }
        return try database.write { db in
            try registry.lockDevice(db, deviceID)
            let (device, created) = try upsertToken(db, deviceID: deviceID, token: token, environment: environment, now: now)
            let existing = try Self.entitlement(db, device: device)
            let kind: Entitlement.Kind = legacyTransactionID == nil ? .operatorProvisioned : .legacy
            if existing?.kind == .storekit && kind == .operatorProvisioned { return (created ? .created : .refreshed, .storekit) }
            try db.execute("""
                INSERT INTO relay_entitlements (device_id, kind, original_index, original_sealed, expires_at, verified_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (device_id) DO UPDATE SET kind = excluded.kind, original_index = excluded.original_index,
                    original_sealed = excluded.original_sealed, product_id = NULL, environment = NULL, signed_at = NULL,
                    expires_at = excluded.expires_at, revoked_at = NULL, verified_at = excluded.verified_at
                """, [device, kind.rawValue, legacyTransactionID.map(originalIndex), sealedOriginal, expiresAt, now])
            return (created ? .created : .refreshed, kind)
        }
    }

    // MARK: POST /provision

    enum ProvisionOutcome: Equatable, Sendable {
        case provisioned
        /// A signed transaction older than the one already verified for this original transaction.
        case stale
        /// The Device ID is held by another active subscription (a different original transaction).
        case conflicting
        /// The subscription already has `FanOutCaps.devicesPerSubscription` other Device IDs.
        case tooManyDevices
    }

    /// Stores a verified, active transaction's record and the token, unless it is stale, conflicting or one Device ID
    /// over the subscription's cap; a new token beyond the Device ID's cap replaces the oldest (`FanOutCaps`).
    func provision(deviceID: String, token: String, environment: APNsEnvironment, verified: SignedTransactionVerifier.Verified,
                   caps: FanOutCaps = FanOutCaps(), now: Int64) throws -> ProvisionOutcome {
        let index = originalIndex(verified.originalTransactionID)
        let sealed = try keyring.seal(Array(verified.originalTransactionID.utf8), purpose: Self.originalPurpose)
        let dIndex = registry.deviceIndex(deviceID)
        return try database.write { db in
            try registry.lockDevice(db, deviceID)
            try db.lockForWrite("relay-original:" + Hex.encode(index))
            if let device: Int64 = try db.scalar("SELECT id FROM relay_devices WHERE device_index = ?", [dIndex]),
               let existing = try Self.entitlement(db, device: device), existing.kind == .storekit {
                if existing.originalIndex == index {
                    if let signed = existing.signedAt, signed > verified.signedAt { return .stale }
                } else if existing.state(now: now) == .active {
                    return .conflicting
                }
            }
            // The subscription's other Device IDs (under the original's lock, so two hosts cannot both take the last place).
            let others: Int = try db.scalar("""
                SELECT count(*) FROM relay_entitlements e JOIN relay_devices d ON d.id = e.device_id
                WHERE e.kind = 'storekit' AND e.original_index = ? AND d.device_index <> ?
                """, [index, dIndex]) ?? 0
            if others >= caps.devicesPerSubscription { return .tooManyDevices }
            let (device, _) = try upsertToken(db, deviceID: deviceID, token: token, environment: environment, maxTokens: caps.tokensPerDevice, now: now)
            try db.execute("""
                INSERT INTO relay_entitlements (device_id, kind, original_index, original_sealed, product_id, environment, signed_at, expires_at, revoked_at, verified_at)
                VALUES (?, 'storekit', ?, ?, ?, ?, ?, ?, NULL, ?)
                ON CONFLICT (device_id) DO UPDATE SET kind = 'storekit', original_index = excluded.original_index, original_sealed = excluded.original_sealed,
                    product_id = excluded.product_id, environment = excluded.environment, signed_at = excluded.signed_at,
                    expires_at = excluded.expires_at, revoked_at = NULL, verified_at = excluded.verified_at
                """, [device, index, sealed, verified.productID, verified.environment, verified.signedAt, verified.expiresAt, now])
            return .provisioned
        }
    }

    /// A verified transaction that is expired or revoked: when it is newer evidence about the very subscription the
    /// Device ID holds, the stored record takes it (so triggers stop); nothing else changes.
    func recordLapse(deviceID: String, verified: SignedTransactionVerifier.Verified, revokedAt: Int64?) throws {
        let index = originalIndex(verified.originalTransactionID)
        let dIndex = registry.deviceIndex(deviceID)
        try database.write { db in
            try registry.lockDevice(db, deviceID)
            try db.execute("""
                UPDATE relay_entitlements SET expires_at = ?, revoked_at = ?, signed_at = ?
                WHERE kind = 'storekit' AND original_index = ? AND coalesce(signed_at, 0) <= ?
                  AND device_id = (SELECT id FROM relay_devices WHERE device_index = ?)
                """, [verified.expiresAt, revokedAt, verified.signedAt, index, verified.signedAt, dIndex])
        }
    }

    enum LegacyOutcome: Equatable, Sendable { case refreshed, notRegistered }

    /// The numeric original id may only refresh an exact legacy registration: this Device ID, this token, this id.
    func refreshLegacy(deviceID: String, token: String, transactionID: String, now: Int64) throws -> LegacyOutcome {
        let dIndex = registry.deviceIndex(deviceID), tIndex = registry.tokenIndex(token), oIndex = originalIndex(transactionID)
        return try database.write { db in
            try registry.lockDevice(db, deviceID)
            try db.lockForWrite("relay-original:" + Hex.encode(oIndex))
            let changed = try db.execute("""
                UPDATE relay_tokens SET registered_at = max(registered_at, ?)
                WHERE token_index = ? AND device_id = (
                    SELECT d.id FROM relay_devices d JOIN relay_entitlements e ON e.device_id = d.id
                    WHERE d.device_index = ? AND e.kind = 'legacy' AND e.original_index = ?)
                """, [now, tIndex, dIndex, oIndex])
            return changed > 0 ? .refreshed : .notRegistered
        }
    }

    // MARK: POST /trigger

    enum TriggerOutcome: Equatable, Sendable {
        /// Observed; `tokens` live tokens will be woken, the push due at `pushDueAt` (now, or when the debounce window ends).
        case accepted(tokens: Int, pushDueAt: Int64)
        case notProvisioned
        case expired
        case revoked
        /// Over the Device ID's trigger rate limit; retry after this many seconds.
        case rateLimited(retryAfter: Int)
        /// A v1 trigger for a Device ID pinned to authenticated triggers (docs/protocols/trigger-v2.md).
        case authenticationRequired
        /// A v2 trigger whose nonce was already used for this Device ID.
        case replayed
    }

    /// What the trigger gate found for a Device ID: open (its row, live tokens, last push, pin), or a refusal.
    private enum Gate {
        case open(device: Int64, tokens: Int, lastPush: Int64?, pinned: Bool)
        case closed(TriggerOutcome)
    }

    /// Registration, live tokens and an active entitlement, read inside `db`'s open transaction.
    private func gate(_ db: Database, deviceID: String, now: Int64) throws -> Gate {
        guard let row = try db.queryOne("SELECT id, last_push_at, v2_pinned_at FROM relay_devices WHERE device_index = ?",
                                        [registry.deviceIndex(deviceID)]) else { return .closed(.notProvisioned) }
        let device: Int64 = try row.get(0)
        let lastPush: Int64? = try row.get(1)
        let pinnedAt: Int64? = try row.get(2)
        let tokens: Int = try db.scalar("SELECT count(*) FROM relay_tokens WHERE device_id = ? AND NOT \(TokenCleanup.deadSQL())",
                                        [device]) ?? 0
        guard tokens > 0, let entitlement = try Self.entitlement(db, device: device) else { return .closed(.notProvisioned) }
        switch entitlement.state(now: now) {
        case .expired: return .closed(.expired)
        case .revoked: return .closed(.revoked)
        case .active: return .open(device: device, tokens: tokens, lastPush: lastPush, pinned: pinnedAt != nil)
        }
    }

    /// Observes an accepted trigger on an open gate and says when its push is due.
    private func accept(_ db: Database, device: Int64, tokens: Int, lastPush: Int64?, authenticated: Bool, now: Int64) throws -> TriggerOutcome {
        try Registry.observeTrigger(db, device: device, now: now)
        try db.execute("UPDATE relay_devices SET last_trigger_authenticated = ? WHERE id = ?", [authenticated ? 1 : 0, device])
        let due = lastPush.map { max(now, min(now, $0) + WakeupDebounce.windowMilliseconds) } ?? now
        return .accepted(tokens: tokens, pushDueAt: due)
    }

    /// A v1 trigger: the rate limit, the gate, the pin and the observation in one transaction (one commit per
    /// trigger): the time is stored only when the Device ID is within its limit, has live tokens and an active
    /// entitlement and is not pinned to v2, and never moves backwards. A pinned refusal is counted on the Device ID.
    /// A Device ID that is unknown or has no live token is refused before anything is counted: it writes nothing,
    /// so junk Device IDs cost no write (docs/roles/relay.md, "Unknown Device IDs write nothing").
    func trigger(deviceID: String, limit: Int, now: Int64) throws -> TriggerOutcome {
        try database.write { db in
            try registry.lockDevice(db, deviceID)
            let gate = try gate(db, deviceID: deviceID, now: now)
            if case .closed(.notProvisioned) = gate { return .notProvisioned }
            if let seconds = try countRequest(db, route: "trigger", deviceID: deviceID, limit: limit, now: now) { return .rateLimited(retryAfter: seconds) }
            switch gate {
            case .closed(let outcome): return outcome
            case .open(let device, _, _, true):
                try db.execute("UPDATE relay_devices SET v1_refused_by_pin = v1_refused_by_pin + 1 WHERE id = ?", [device])
                return .authenticationRequired
            case .open(let device, let tokens, let lastPush, false):
                return try accept(db, device: device, tokens: tokens, lastPush: lastPush, authenticated: false, now: now)
            }
        }
    }

    /// The cheap checks of a v2 trigger, before any signature work: counts it against the Device ID's trigger rate
    /// limit (shared with v1) and checks the gate. Stores nothing but the count (and not even that for an unknown
    /// or unprovisioned Device ID); `.accepted` here means "go on".
    func precheckAuthenticated(deviceID: String, limit: Int, now: Int64) throws -> TriggerOutcome {
        try database.write { db in
            try registry.lockDevice(db, deviceID)
            let gate = try gate(db, deviceID: deviceID, now: now)
            if case .closed(.notProvisioned) = gate { return .notProvisioned }
            if let seconds = try countRequest(db, route: "trigger", deviceID: deviceID, limit: limit, now: now) { return .rateLimited(retryAfter: seconds) }
            switch gate {
            case .closed(let outcome): return outcome
            case .open(_, let tokens, _, _): return .accepted(tokens: tokens, pushDueAt: now)
            }
        }
    }

    /// A verified v2 trigger: the gate again, the nonce (refused when this Device ID already used it, on any host:
    /// the unique key decides), the pin and the observation, in one transaction. `nonceExpiresAt` is when the
    /// request's timestamp leaves the freshness window on every host; expired nonces are pruned as it goes.
    func acceptAuthenticated(deviceID: String, nonce: [UInt8], nonceExpiresAt: Int64, now: Int64) throws -> TriggerOutcome {
        let nonceIndex = keyring.blindIndex(Array(deviceID.utf8) + nonce, purpose: Self.noncePurpose)
        return try database.write { db in
            try registry.lockDevice(db, deviceID)
            switch try gate(db, deviceID: deviceID, now: now) {
            case .closed(let outcome): return outcome
            case .open(let device, let tokens, let lastPush, _):
                let inserted = try db.execute("INSERT INTO relay_trigger_nonces (nonce_index, expires_at) VALUES (?, ?) ON CONFLICT (nonce_index) DO NOTHING",
                                              [nonceIndex, nonceExpiresAt])
                guard inserted > 0 else { return .replayed }
                try db.execute("""
                    DELETE FROM relay_trigger_nonces WHERE nonce_index IN (
                        SELECT nonce_index FROM relay_trigger_nonces WHERE expires_at < ? LIMIT 100)
                    """, [now])
                try db.execute("UPDATE relay_devices SET v2_pinned_at = coalesce(v2_pinned_at, ?) WHERE id = ?", [now, device])
                return try accept(db, device: device, tokens: tokens, lastPush: lastPush, authenticated: true, now: now)
            }
        }
    }

    /// Lifts the v2 pin of one Device ID (`job relay unpin`): v1 triggers are accepted again. False when it was not pinned.
    func unpin(deviceID: String) throws -> Bool {
        try database.write { db in
            try registry.lockDevice(db, deviceID)
            return try db.execute("UPDATE relay_devices SET v2_pinned_at = NULL WHERE device_index = ? AND v2_pinned_at IS NOT NULL",
                                  [registry.deviceIndex(deviceID)]) > 0
        }
    }

    static let noncePurpose = "relay.trigger-nonce"

    // MARK: POST /status

    enum StatusOutcome: Equatable, Sendable {
        /// The last observed trigger's time, and whether it was an authenticated (v2) one.
        case observed(at: Int64?, authenticated: Bool)
        /// The Device ID holds no active verified row matching the presented transaction.
        case noMatchingSubscription
    }

    /// The last observed trigger, only when the Device ID's active StoreKit row is the presented transaction's.
    func status(deviceID: String, verified: SignedTransactionVerifier.Verified, now: Int64) throws -> StatusOutcome {
        let dIndex = registry.deviceIndex(deviceID)
        let index = originalIndex(verified.originalTransactionID)
        return try database.read { db in
            guard let row = try db.queryOne("SELECT id, last_trigger_at, last_trigger_authenticated FROM relay_devices WHERE device_index = ?",
                                            [dIndex]) else { return .noMatchingSubscription }
            let device: Int64 = try row.get(0)
            guard let entitlement = try Self.entitlement(db, device: device), entitlement.kind == .storekit, entitlement.originalIndex == index,
                  entitlement.productID == verified.productID, entitlement.environment == verified.environment,
                  entitlement.state(now: now) == .active else { return .noMatchingSubscription }
            let at: Int64? = try row.get(1)
            let authenticated: Int64 = try row.get(2)
            return .observed(at: at, authenticated: at != nil && authenticated == 1)
        }
    }

    // MARK: Rate limits

    /// Counts one request of `route` for `deviceID` in its fixed one-minute window; nil when allowed, else the
    /// seconds until the window ends (for `Retry-After`). Windows older than two minutes are pruned as it goes.
    func rateLimit(route: String, deviceID: String, limit: Int, now: Int64) throws -> Int? {
        try database.write { db in try countRequest(db, route: route, deviceID: deviceID, limit: limit, now: now) }
    }

    /// `rateLimit` inside `db`'s open write transaction.
    func countRequest(_ db: Database, route: String, deviceID: String, limit: Int, now: Int64) throws -> Int? {
        let bucket = registry.deviceIndex(deviceID)
        let window: Int64 = 60_000
        // One statement reads and counts, so requests served at once by several `serve-relay` processes (on one
        // PostgreSQL store, where writers do not exclude each other) each count: the upsert locks the row.
        // A request's `now` is read when it arrives, and requests commit in another order (a batch, another host,
        // a request put back to the next batch): one whose `now` is a little before the window's start belongs to
        // that window and counts in it. Only a time a whole window away on either side (the clock stepped) starts
        // a new one.
        guard let row = try db.queryOne("""
            INSERT INTO relay_rate_limits (bucket, route, window_start_at, count) VALUES (?1, ?2, ?3, 1)
            ON CONFLICT (bucket, route) DO UPDATE SET
                window_start_at = CASE WHEN ?3 - relay_rate_limits.window_start_at < ?4 AND relay_rate_limits.window_start_at - ?3 < ?4
                    THEN relay_rate_limits.window_start_at ELSE ?3 END,
                count = CASE WHEN ?3 - relay_rate_limits.window_start_at < ?4 AND relay_rate_limits.window_start_at - ?3 < ?4
                    THEN relay_rate_limits.count + 1 ELSE 1 END
            RETURNING window_start_at, count
            """, [bucket, route, now, window]) else {
            throw JobError.internal("the rate-limit upsert returned no row")
        }
        let start: Int64 = try row.get(0)
        let count: Int = try row.get(1)
        try db.execute("""
            DELETE FROM relay_rate_limits WHERE (bucket, route) IN (
                SELECT bucket, route FROM relay_rate_limits WHERE window_start_at < ? LIMIT 100)
            """, [now - 2 * window])
        guard count > limit else { return nil }
        return Int(min(window / 1000, max(1, (start + window - now + 999) / 1000)))
    }
}
