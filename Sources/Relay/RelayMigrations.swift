import Store

/// The relay module's tables: registrations (devices and their APNs tokens), the cached APNs provider
/// token, and the homeserver helper's retrigger state.
///
/// Device IDs are kept only as a blind index (the relay never needs them back); APNs tokens are sealed
/// with the store keyring and found by blind index. Each token keeps only its latest APNs result, so
/// `clean-tokens` is one indexed batch delete however large the table grows.
enum RelayMigrations {
    static let all: [Migration] = [
        Migration("relay-001-registrations", sql: """
            CREATE TABLE relay_devices (
                id INTEGER PRIMARY KEY,
                device_index BLOB NOT NULL UNIQUE,
                created_at INTEGER NOT NULL,
                last_trigger_at INTEGER,
                last_push_at INTEGER
            ) STRICT;
            CREATE INDEX relay_devices_pending ON relay_devices (last_trigger_at) WHERE last_trigger_at IS NOT NULL;

            CREATE TABLE relay_tokens (
                id INTEGER PRIMARY KEY,
                device_id INTEGER NOT NULL REFERENCES relay_devices (id) ON DELETE CASCADE,
                token_index BLOB NOT NULL,
                token_sealed BLOB NOT NULL,
                environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
                registered_at INTEGER NOT NULL,
                result_status INTEGER,
                result_reason TEXT,
                result_at INTEGER,
                invalidated_at INTEGER,
                retry_due INTEGER NOT NULL DEFAULT 0 CHECK (retry_due IN (0, 1)),
                UNIQUE (device_id, token_index)
            ) STRICT;
            CREATE INDEX relay_tokens_retry ON relay_tokens (device_id) WHERE retry_due = 1;
            CREATE INDEX relay_tokens_invalid ON relay_tokens (id)
                WHERE result_reason IN ('BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken');

            CREATE TABLE relay_provider_token (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                key_fingerprint BLOB NOT NULL,
                jwt_sealed BLOB NOT NULL,
                minted_at INTEGER NOT NULL
            ) STRICT;

            CREATE TABLE relay_helper_state (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                last_sent_at INTEGER,
                last_checked_at INTEGER,
                last_answer TEXT,
                inactive_until_at INTEGER,
                backoff_until_at INTEGER,
                transient_failures INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            """),
        // A push is stamped on its token before it is handed to APNs, so a pass killed after sending and
        // before recording cannot push that token again within the debounce window (see `WakeupDebounce`).
        Migration("relay-002-token-sent-at", sql: """
            ALTER TABLE relay_tokens ADD COLUMN sent_at INTEGER;
            """),
        // 413 PayloadTooLarge joins the dead-token reasons: the partial index follows `TokenCleanup.invalidReasonsSQL`.
        // The `sent_at` and push-time indexes make the future-stamp check (`StoredClock`) an index probe.
        Migration("relay-003-dead-reasons-and-clock", sql: """
            DROP INDEX relay_tokens_invalid;
            CREATE INDEX relay_tokens_invalid ON relay_tokens (id)
                WHERE result_reason IN ('BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered', 'ExpiredToken', 'PayloadTooLarge');
            CREATE INDEX relay_tokens_sent_at ON relay_tokens (sent_at) WHERE sent_at IS NOT NULL;
            CREATE INDEX relay_tokens_result_at ON relay_tokens (result_at) WHERE result_at IS NOT NULL;
            CREATE INDEX relay_devices_last_push ON relay_devices (last_push_at) WHERE last_push_at IS NOT NULL;
            CREATE INDEX relay_tokens_registered_at ON relay_tokens (registered_at);
            """),
    ]
}
