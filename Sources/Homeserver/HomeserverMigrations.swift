import Store

/// The homeserver helper's tables: the one-row state `retrigger-stale` and `watch-syncthing` share.
///
/// The table keeps the name it had while the helper was part of the relay module, whose first migration
/// (`relay-001-registrations`, append-only like every shipped migration) still creates it; hence `IF NOT EXISTS`,
/// and the homeserver module is listed after the relay module so that one runs first on a new store.
enum HomeserverMigrations {
    static let all: [Migration] = [
        Migration("homeserver-001-helper-state", sql: """
            CREATE TABLE IF NOT EXISTS relay_helper_state (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                last_sent_at INTEGER,
                last_checked_at INTEGER,
                last_answer TEXT,
                inactive_until_at INTEGER,
                backoff_until_at INTEGER,
                transient_failures INTEGER NOT NULL DEFAULT 0
            ) STRICT;
            """),
        // The change watcher's presence beside the sweep's state: since when it holds a wake-up back (debounce or a
        // relay back-off) and when it last said it is alive; `retrigger-stale` skips while both say so.
        Migration("homeserver-002-watcher-presence", sql: """
            ALTER TABLE relay_helper_state ADD COLUMN watcher_pending_since INTEGER;
            ALTER TABLE relay_helper_state ADD COLUMN watcher_seen_at INTEGER;
            """),
        // Authenticated triggers (docs/protocols/trigger-v2.md): when the relay first accepted this helper's v2
        // trigger (from then on it never sends v1), and when it last answered the v2 route with 404/405 (then v1 is
        // sent, and v2 tried again after one cadence).
        Migration("homeserver-003-trigger-v2", sql: """
            ALTER TABLE relay_helper_state ADD COLUMN v2_accepted_at INTEGER;
            ALTER TABLE relay_helper_state ADD COLUMN v2_unsupported_at INTEGER;
            """),
    ]
}
