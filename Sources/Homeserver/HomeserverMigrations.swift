import Store

/// The homeserver helper's tables: the one-row state `retrigger-stale` keeps between passes.
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
    ]
}
