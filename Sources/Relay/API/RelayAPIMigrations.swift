import Store

/// The relay front door's tables: each Device ID's entitlement (what lets its triggers through) and the
/// per-Device-ID rate-limit counters, both in the store so every `serve-relay` process shares them.
///
/// An entitlement is `operator` (added by `job relay register`, active until unregistered or `expires_at`),
/// `storekit` (a verified signed transaction: only the original transaction id, sealed and blind-indexed,
/// its product, environment, expiry, signed date and revocation — never the JWS), or `legacy` (a registration
/// from before signed transactions, keyed by the numeric original id, refreshable until the cutoff).
/// Registrations that existed before this migration were made by the operator: they become `operator`.
enum RelayAPIMigrations {
    static let all: [Migration] = [
        Migration("relay-api-001-entitlements-and-rate-limits", sql: """
            CREATE TABLE relay_entitlements (
                device_id INTEGER PRIMARY KEY REFERENCES relay_devices (id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('operator', 'storekit', 'legacy')),
                original_index BLOB,
                original_sealed BLOB,
                product_id TEXT,
                environment TEXT,
                signed_at INTEGER,
                expires_at INTEGER,
                revoked_at INTEGER,
                verified_at INTEGER NOT NULL
            ) STRICT;
            INSERT INTO relay_entitlements (device_id, kind, verified_at) SELECT id, 'operator', created_at FROM relay_devices;

            CREATE TABLE relay_rate_limits (
                bucket BLOB NOT NULL,
                route TEXT NOT NULL,
                window_start_at INTEGER NOT NULL,
                count INTEGER NOT NULL,
                PRIMARY KEY (bucket, route)
            ) STRICT;
            CREATE INDEX relay_rate_limits_window ON relay_rate_limits (window_start_at);
            """),
    ]
}
