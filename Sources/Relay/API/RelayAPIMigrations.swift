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
        // Authenticated triggers (docs/protocols/trigger-v2.md): the capability pin (a Device ID whose v2 trigger
        // verified refuses v1), whether the last accepted trigger was authenticated, how many v1 triggers the pin
        // refused, and the nonces seen (blind-indexed with their Device ID, kept until their timestamp can no longer
        // pass the freshness check on any host).
        Migration("relay-api-002-trigger-v2", sql: """
            ALTER TABLE relay_devices ADD COLUMN v2_pinned_at INTEGER;
            ALTER TABLE relay_devices ADD COLUMN last_trigger_authenticated INTEGER NOT NULL DEFAULT 0
                CHECK (last_trigger_authenticated IN (0, 1));
            ALTER TABLE relay_devices ADD COLUMN v1_refused_by_pin INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE relay_trigger_nonces (
                nonce_index BLOB PRIMARY KEY,
                expires_at INTEGER NOT NULL
            ) STRICT;
            CREATE INDEX relay_trigger_nonces_expiry ON relay_trigger_nonces (expires_at);
            """),
    ]
}
