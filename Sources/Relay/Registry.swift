import Foundation
import Cryptography
import Runner
import Store

/// The relay's registrations: which APNs tokens wake which homeserver Device ID, and when a trigger
/// for a Device ID was last observed.
///
/// Device IDs are stored only as a keyed blind index; tokens are sealed (AES-256-GCM) and found by
/// blind index (docs/design.md §4). One Device ID may hold several tokens (iPhone and iPad).
struct Registry {
    static let devicePurpose = "relay.device-id"
    static let tokenPurpose = "relay.apns-token"

    let database: Database
    let keyring: StoreKeyring

    init(database: Database, keyring: StoreKeyring) {
        self.database = database
        self.keyring = keyring
    }

    /// The registry over the context's store and store key.
    init(_ context: JobContext) throws {
        keyring = try context.keyring()
        database = context.database
    }

    func deviceIndex(_ deviceID: String) -> [UInt8] { keyring.blindIndex(Array(deviceID.utf8), purpose: Self.devicePurpose) }
    func tokenIndex(_ token: String) -> [UInt8] { keyring.blindIndex(Array(token.utf8), purpose: Self.tokenPurpose) }

    /// Serialises the writers of one Device ID's rows until the transaction ends: on PostgreSQL, several
    /// `serve-relay` processes may register, provision or trigger the same Device ID at once, and each reads before
    /// it writes (on SQLite the write transaction already excludes them).
    func lockDevice(_ db: Database, _ deviceID: String) throws {
        try db.lockForWrite("relay-device:" + Hex.encode(deviceIndex(deviceID)))
    }

    /// Whether `register` added a token or refreshed one already held.
    enum RegisterOutcome: String, LogWord { case created, refreshed }

    /// Adds `token` to `deviceID` or, when it is already registered there, updates its registration time
    /// and environment (the provisioning endpoint's store effect).
    func register(deviceID: String, token: String, environment: APNsEnvironment, now: Int64) throws -> RegisterOutcome {
        let dIndex = deviceIndex(deviceID)
        let tIndex = tokenIndex(token)
        let sealed = try keyring.seal(Array(token.utf8), purpose: Self.tokenPurpose)
        return try database.write { db in
            try lockDevice(db, deviceID)
            try db.execute("INSERT INTO relay_devices (device_index, created_at) VALUES (?, ?) ON CONFLICT (device_index) DO NOTHING", [dIndex, now])
            guard let device: Int64 = try db.scalar("SELECT id FROM relay_devices WHERE device_index = ?", [dIndex]) else {
                throw JobError.internal("the registration row vanished inside its transaction")
            }
            let existing: Int64? = try db.scalar("SELECT id FROM relay_tokens WHERE device_id = ? AND token_index = ?", [device, tIndex])
            if let existing {
                try db.execute("UPDATE relay_tokens SET registered_at = max(registered_at, ?), environment = ?, token_sealed = ? WHERE id = ?",
                               [now, environment.rawValue, sealed, existing])
                return .refreshed
            }
            try db.execute("""
                INSERT INTO relay_tokens (device_id, token_index, token_sealed, environment, registered_at) VALUES (?, ?, ?, ?, ?)
                """, [device, tIndex, sealed, environment.rawValue, now])
            return .created
        }
    }

    /// Removes `token` from `deviceID`; a Device ID left with no token is removed too. False when the
    /// pair was not registered.
    func unregister(deviceID: String, token: String) throws -> Bool {
        let dIndex = deviceIndex(deviceID)
        let tIndex = tokenIndex(token)
        return try database.write { db in
            try lockDevice(db, deviceID)
            guard let device: Int64 = try db.scalar("SELECT id FROM relay_devices WHERE device_index = ?", [dIndex]) else { return false }
            let removed = try db.execute("DELETE FROM relay_tokens WHERE device_id = ? AND token_index = ?", [device, tIndex])
            try db.execute("DELETE FROM relay_devices WHERE id = ? AND NOT EXISTS (SELECT 1 FROM relay_tokens WHERE device_id = ?)", [device, device])
            return removed > 0
        }
    }

    /// Records an accepted trigger: the observation time for `deviceID` (never moved backwards).
    /// False when the Device ID holds no registration (the front-end refuses such a trigger).
    ///
    /// The trigger is always left pending: a push or an answer stored at or after `now` (the clock went backwards,
    /// or they share the millisecond) is treated as having happened just before it (`now - 1`), so the Device ID is
    /// pushed once the debounce window allows, never held back until the clock passes the stored time.
    func recordTrigger(deviceID: String, now: Int64) throws -> Bool {
        let dIndex = deviceIndex(deviceID)
        return try database.write { db in
            try lockDevice(db, deviceID)
            guard let device: Int64 = try db.scalar("""
                SELECT id FROM relay_devices WHERE device_index = ? AND EXISTS (SELECT 1 FROM relay_tokens WHERE relay_tokens.device_id = relay_devices.id)
                """, [dIndex]) else { return false }
            try Self.observeTrigger(db, device: device, now: now)
            return true
        }
    }

    /// Stores a trigger observed at `now` on Device ID row `device`, leaving it pending (`relay trigger` and
    /// `serve-relay` both): its time never moves backwards, and a push or an answer stored at or after `now` is
    /// treated as having happened just before it. That covers a clock that went backwards, a shared millisecond,
    /// and, with several hosts, a trigger that read its clock before another host's pass consumed an older trigger
    /// and committed after it — without the rule that trigger would look pushed already and be lost. The per-token
    /// stamps (`sent_at`) still keep every token out of a second push within the debounce window.
    static func observeTrigger(_ db: Database, device: Int64, now: Int64) throws {
        try db.execute("""
            UPDATE relay_devices SET last_trigger_at = max(coalesce(last_trigger_at, 0), ?1),
                last_push_at = CASE WHEN last_push_at >= ?1 THEN ?1 - 1 ELSE last_push_at END
            WHERE id = ?2
            """, [now, device])
        try db.execute("UPDATE relay_tokens SET result_at = ?1 - 1 WHERE device_id = ?2 AND result_at >= ?1", [now, device])
    }

    /// Counts only (no identifier ever leaves the store through `show`).
    struct Summary {
        var devices = 0
        var tokens = 0
        var production = 0
        var sandbox = 0
        var devicesAwaitingPush = 0
        var tokensAwaitingRetry = 0
        var tokensMarkedInvalid = 0
        var tokensDelivered = 0
    }

    /// `trailingPush`: `RELAY_TRAILING_PUSH=on`, under which a trigger inside the debounce window awaits a push too.
    static func summary(_ database: Database, trailingPush: Bool = false) throws -> Summary {
        try database.read { db in
            var summary = Summary()
            summary.devices = try db.scalar("SELECT count(*) FROM relay_devices") ?? 0
            summary.tokens = try db.scalar("SELECT count(*) FROM relay_tokens") ?? 0
            summary.production = try db.scalar("SELECT count(*) FROM relay_tokens WHERE environment = 'production'") ?? 0
            summary.sandbox = try db.scalar("SELECT count(*) FROM relay_tokens WHERE environment = 'sandbox'") ?? 0
            summary.devicesAwaitingPush = try db.scalar("""
                SELECT count(*) FROM relay_devices WHERE last_trigger_at IS NOT NULL AND (last_push_at IS NULL OR last_trigger_at \
                \(trailingPush ? ">" : ">=") last_push_at\(trailingPush ? "" : " + \(WakeupDebounce.windowMilliseconds)"))
                """) ?? 0
            summary.tokensAwaitingRetry = try db.scalar("SELECT count(*) FROM relay_tokens WHERE retry_due = 1") ?? 0
            summary.tokensMarkedInvalid = try db.scalar("SELECT count(*) FROM relay_tokens WHERE \(TokenCleanup.invalidReasonsSQL)") ?? 0
            summary.tokensDelivered = try db.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200") ?? 0
            return summary
        }
    }
}
