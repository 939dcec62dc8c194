import Store

/// The module's tables: identities, the active-identity pointer, pool generations with their slots, and the
/// record of background fetches.
///
/// A pool is a *generation*: a mint pass writes a `staging` generation in batches, then one transaction retires
/// the `live` one and makes the new one `live`. Readers (prefetch, export, show) only ever read the `live`
/// generation, so they see the whole old pool or the whole new one. `retired` and abandoned `staging`
/// generations are purged in batches by later steps.
enum TokenPoolMigrations {
    static let all: [Migration] = [
        Migration("token-pool-001-identities", sql: """
            CREATE TABLE token_pool_identities (
                id INTEGER PRIMARY KEY,
                did TEXT NOT NULL UNIQUE,
                method TEXT NOT NULL CHECK (method IN ('ethr', 'peer')),
                -- AES-256-GCM under the store key (purpose token-pool-identity-key); NULL for did:peer (no key here).
                sealed_private_key BLOB,
                created_at INTEGER NOT NULL,
                CHECK ((method = 'ethr') = (sealed_private_key IS NOT NULL))
            ) STRICT;
            CREATE TABLE token_pool_active_identity (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                identity_id INTEGER NOT NULL REFERENCES token_pool_identities (id),
                changed_at INTEGER NOT NULL
            ) STRICT;
            """),
        Migration("token-pool-002-pools", sql: """
            CREATE TABLE token_pool_generations (
                id INTEGER PRIMARY KEY,
                identity_id INTEGER NOT NULL REFERENCES token_pool_identities (id),
                state TEXT NOT NULL CHECK (state IN ('staging', 'live', 'retired')),
                first_day INTEGER NOT NULL,
                size INTEGER NOT NULL CHECK (size > 0),
                slack_seconds INTEGER NOT NULL,
                issued_at INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                live_at INTEGER
            ) STRICT;
            CREATE UNIQUE INDEX token_pool_generations_one_live ON token_pool_generations (state) WHERE state = 'live';
            CREATE TABLE token_pool_slots (
                generation_id INTEGER NOT NULL REFERENCES token_pool_generations (id),
                slot INTEGER NOT NULL CHECK (slot >= 0),
                day INTEGER NOT NULL,
                not_before_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL,
                -- AES-256-GCM under the store key (purpose token-pool-jwt).
                sealed_token BLOB NOT NULL,
                -- Blind index (HMAC) of the token: distinctness is enforced without storing the token in clear.
                token_index BLOB NOT NULL,
                PRIMARY KEY (generation_id, slot),
                UNIQUE (generation_id, token_index)
            ) STRICT, WITHOUT ROWID;
            """),
        Migration("token-pool-003-fetches", sql: """
            CREATE TABLE token_pool_fetches (
                id INTEGER PRIMARY KEY,
                fetched_at INTEGER NOT NULL,
                day INTEGER NOT NULL,
                slot INTEGER,
                outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'no-credential', 'credential-rejected', 'refused', 'transient', 'bad-response')),
                http_status INTEGER,
                row_count INTEGER,
                hit_limit INTEGER CHECK (hit_limit IN (0, 1))
            ) STRICT;
            """),
        // Slot binding (`PoolSealing`): each generation's random seal context, bound into every token's associated
        // data with the DID, slot and day. NULL marks a pool sealed before the binding (legacy: refused for use,
        // replaced by the next mint-pool).
        Migration("token-pool-004-seal-context", sql: """
            ALTER TABLE token_pool_generations ADD COLUMN seal_context BLOB CHECK (seal_context IS NULL OR length(seal_context) = 16);
            """),
        // A 429/503 answer's Retry-After: no prefetch request goes out before this instant (Unix ms).
        Migration("token-pool-005-retry-after", sql: """
            ALTER TABLE token_pool_fetches ADD COLUMN retry_not_before INTEGER;
            """),
        // What prefetch found (`ActivityStore`): rows sealed, and the paging state of a round in progress.
        Migration("token-pool-006-activity", sql: """
            CREATE TABLE token_pool_activity (
                id INTEGER PRIMARY KEY,
                -- Blind index (HMAC) of the row's plan jwtId: a row fetched twice is kept once.
                row_index BLOB NOT NULL UNIQUE,
                -- The row's JSON, AES-256-GCM under the store key (purpose token-pool-activity).
                sealed_row BLOB NOT NULL,
                fetched_at INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE token_pool_prefetch_paging (
                singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
                after_id TEXT NOT NULL,
                before_id TEXT NOT NULL,
                newest_id TEXT NOT NULL
            ) STRICT;
            """),
    ]
}
