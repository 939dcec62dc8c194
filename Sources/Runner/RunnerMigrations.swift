import Store

/// The runner's own tables: the run ledger, the leases and the shared settings.
enum RunnerMigrations {
    static let all: [Migration] = [
        Migration("runner-001-ledger-leases-settings", sql: """
            CREATE TABLE job_runs (
                id INTEGER PRIMARY KEY,
                job TEXT NOT NULL,
                started_at INTEGER NOT NULL,
                finished_at INTEGER,
                outcome TEXT NOT NULL CHECK (outcome IN ('running', 'completed', 'skipped', 'failed')),
                exit_code INTEGER,
                duration_ms INTEGER,
                counts TEXT NOT NULL DEFAULT '{}',
                reason TEXT
            ) STRICT;
            CREATE INDEX job_runs_by_job ON job_runs (job, started_at);
            CREATE INDEX job_runs_by_start ON job_runs (started_at);
            CREATE TABLE job_leases (
                job TEXT PRIMARY KEY NOT NULL,
                holder TEXT NOT NULL,
                acquired_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE settings (
                key TEXT PRIMARY KEY NOT NULL,
                value TEXT NOT NULL,
                updated_at INTEGER NOT NULL
            ) STRICT;
            """),
        // One row: a value sealed under the store key, so a wrong key is caught before any secret is read.
        Migration("runner-002-store-key-check", sql: """
            CREATE TABLE store_key_check (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                sealed BLOB NOT NULL,
                created_at INTEGER NOT NULL
            ) STRICT;
            """),
    ]
}
