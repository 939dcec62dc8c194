import Runner

/// The Grants module's tables (docs/protocols/grants-and-link.md §6 plus the node key, offers and notifications), as named migrations.
///
/// Identifiers that name people (endpoint ids, grant ids) and secrets (grant secrets, tickets, the endpoint key)
/// are sealed with the store keyring; lookups go through keyed blind indexes (`*_index` columns).
enum GrantsMigrations {
    static let all: [Migration] = [
        Migration("grants-001-tables", sql: """
            CREATE TABLE node_identity (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                key_sealed BLOB NOT NULL,
                public_key BLOB NOT NULL CHECK (length(public_key) = 32),
                created_at INTEGER NOT NULL
            ) STRICT;

            CREATE TABLE contacts (
                id INTEGER PRIMARY KEY,
                endpoint_index BLOB NOT NULL UNIQUE,
                endpoint_sealed BLOB NOT NULL,
                local_label TEXT NOT NULL,
                remote_display_name TEXT,
                remote_name_changed INTEGER NOT NULL DEFAULT 0 CHECK (remote_name_changed IN (0, 1)),
                last_known_addr TEXT,
                status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked', 'lapsed')),
                last_pull_at INTEGER,
                created_at INTEGER NOT NULL,
                last_transfer_at INTEGER
            ) STRICT;

            CREATE TABLE grants_issued (
                id INTEGER PRIMARY KEY,
                grant_index BLOB NOT NULL UNIQUE,
                grant_sealed BLOB NOT NULL,
                secret_sealed BLOB NOT NULL,
                endpoint_index BLOB NOT NULL,
                endpoint_sealed BLOB NOT NULL,
                lifetime_ms INTEGER CHECK (lifetime_ms IS NULL OR lifetime_ms > 0),
                created_at INTEGER NOT NULL,
                expires_at INTEGER,
                last_used_at INTEGER,
                revoked_at INTEGER,
                revoke_reason TEXT CHECK (revoke_reason IN ('revoked', 'expired')),
                CHECK ((revoked_at IS NULL) = (revoke_reason IS NULL))
            ) STRICT;
            CREATE INDEX grants_issued_by_endpoint ON grants_issued (endpoint_index);
            CREATE INDEX grants_issued_tombstones ON grants_issued (revoked_at) WHERE revoked_at IS NOT NULL;

            CREATE TABLE grants_held (
                id INTEGER PRIMARY KEY,
                grant_index BLOB NOT NULL UNIQUE,
                grant_sealed BLOB NOT NULL,
                secret_sealed BLOB NOT NULL,
                contact_id INTEGER NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
                created_at INTEGER NOT NULL,
                expires_at INTEGER,
                peer_revoked_at INTEGER
            ) STRICT;
            CREATE INDEX grants_held_by_contact ON grants_held (contact_id);
            CREATE INDEX grants_held_peer_revoked ON grants_held (peer_revoked_at) WHERE peer_revoked_at IS NOT NULL;

            CREATE TABLE blocked_endpoints (
                endpoint_index BLOB PRIMARY KEY NOT NULL,
                endpoint_sealed BLOB NOT NULL,
                created_at INTEGER NOT NULL
            ) STRICT;

            CREATE TABLE held_offers (
                id INTEGER PRIMARY KEY,
                offer_id TEXT NOT NULL UNIQUE,
                contact_id INTEGER NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
                ticket_sealed BLOB,
                sender_name TEXT,
                file_count INTEGER NOT NULL CHECK (file_count >= 0),
                total_bytes INTEGER NOT NULL CHECK (total_bytes >= 0),
                share_access TEXT NOT NULL CHECK (share_access = 'approval-required'),
                state TEXT NOT NULL CHECK (state IN ('held', 'delivered', 'accepted', 'declined', 'cancelled')),
                share_stopped_at INTEGER,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                CHECK (state NOT IN ('declined', 'cancelled') OR (ticket_sealed IS NULL AND share_stopped_at IS NOT NULL))
            ) STRICT;
            CREATE INDEX held_offers_by_contact ON held_offers (contact_id, state);
            CREATE INDEX held_offers_finished ON held_offers (updated_at) WHERE state IN ('delivered', 'accepted', 'declined', 'cancelled');

            CREATE TABLE incoming_offers (
                id INTEGER PRIMARY KEY,
                offer_id TEXT NOT NULL,
                from_endpoint_index BLOB NOT NULL,
                from_endpoint_sealed BLOB NOT NULL,
                ticket_sealed BLOB,
                sender_name TEXT,
                file_count INTEGER NOT NULL CHECK (file_count >= 0),
                total_bytes INTEGER NOT NULL CHECK (total_bytes >= 0),
                state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'declined')),
                received_at INTEGER NOT NULL,
                decided_at INTEGER,
                decision_reported_at INTEGER,
                UNIQUE (from_endpoint_index, offer_id),
                CHECK (state != 'declined' OR ticket_sealed IS NULL)
            ) STRICT;
            CREATE INDEX incoming_offers_unreported ON incoming_offers (from_endpoint_index) WHERE state != 'pending' AND decision_reported_at IS NULL;
            CREATE INDEX incoming_offers_decided ON incoming_offers (decided_at) WHERE state != 'pending';
            CREATE INDEX incoming_offers_received ON incoming_offers (from_endpoint_index, received_at);

            CREATE TABLE notifications (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('incoming-offer')),
                incoming_offer_id INTEGER REFERENCES incoming_offers (id) ON DELETE CASCADE,
                created_at INTEGER NOT NULL,
                seen_at INTEGER
            ) STRICT;
            CREATE INDEX notifications_by_offer ON notifications (incoming_offer_id);
            """),
        // An incoming offer its sender cancelled: `cancelled`, its ticket deleted. SQLite cannot widen a CHECK in place,
        // so the table is rebuilt. `notifications` references it (ON DELETE CASCADE) and keeps its rows: migrations run
        // with foreign keys off (`Migrator`), so dropping the old table deletes nothing else. (As shipped, this
        // migration copied `notifications` aside and rebuilt it too; the schema and rows it leaves are the same,
        // `GrantsMigrationTests`.)
        Migration("grants-002-incoming-offer-cancelled", sql: """
            CREATE TABLE incoming_offers_new (
                id INTEGER PRIMARY KEY,
                offer_id TEXT NOT NULL,
                from_endpoint_index BLOB NOT NULL,
                from_endpoint_sealed BLOB NOT NULL,
                ticket_sealed BLOB,
                sender_name TEXT,
                file_count INTEGER NOT NULL CHECK (file_count >= 0),
                total_bytes INTEGER NOT NULL CHECK (total_bytes >= 0),
                state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'declined', 'cancelled')),
                received_at INTEGER NOT NULL,
                decided_at INTEGER,
                decision_reported_at INTEGER,
                UNIQUE (from_endpoint_index, offer_id),
                CHECK (state NOT IN ('declined', 'cancelled') OR ticket_sealed IS NULL)
            ) STRICT;
            INSERT INTO incoming_offers_new SELECT id, offer_id, from_endpoint_index, from_endpoint_sealed, ticket_sealed, sender_name,
                file_count, total_bytes, state, received_at, decided_at, decision_reported_at FROM incoming_offers;
            DROP TABLE incoming_offers;
            ALTER TABLE incoming_offers_new RENAME TO incoming_offers;
            CREATE INDEX incoming_offers_unreported ON incoming_offers (from_endpoint_index) WHERE state != 'pending' AND decision_reported_at IS NULL;
            CREATE INDEX incoming_offers_decided ON incoming_offers (decided_at) WHERE state != 'pending';
            CREATE INDEX incoming_offers_received ON incoming_offers (from_endpoint_index, received_at);
            """),
        // The local user's label for the holder of an issued grant (`grants issue --label`), so a one-way holder's
        // offers and the revoke/block commands can name it.
        Migration("grants-003-issued-label", sql: """
            ALTER TABLE grants_issued ADD COLUMN holder_label TEXT;
            """),
        // When dialling a contact last failed (`ContactReachability`: reachable now vs delivered later).
        Migration("grants-004-contact-unreachable", sql: """
            ALTER TABLE contacts ADD COLUMN last_unreachable_at INTEGER;
            """),
        // An outgoing offer that can no longer be delivered (the receiver revoked us, or the pairing lapsed, before it
        // was collected): `undeliverable`, finished by `sweep-grants` with its ticket deleted and its share stopped.
        // SQLite cannot widen a CHECK in place, so the table is rebuilt.
        Migration("grants-005-held-offer-undeliverable", sql: """
            CREATE TABLE held_offers_new (
                id INTEGER PRIMARY KEY,
                offer_id TEXT NOT NULL UNIQUE,
                contact_id INTEGER NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
                ticket_sealed BLOB,
                sender_name TEXT,
                file_count INTEGER NOT NULL CHECK (file_count >= 0),
                total_bytes INTEGER NOT NULL CHECK (total_bytes >= 0),
                share_access TEXT NOT NULL CHECK (share_access = 'approval-required'),
                state TEXT NOT NULL CHECK (state IN ('held', 'delivered', 'accepted', 'declined', 'cancelled', 'undeliverable')),
                share_stopped_at INTEGER,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                CHECK (state NOT IN ('declined', 'cancelled', 'undeliverable') OR (ticket_sealed IS NULL AND share_stopped_at IS NOT NULL))
            ) STRICT;
            INSERT INTO held_offers_new SELECT id, offer_id, contact_id, ticket_sealed, sender_name, file_count, total_bytes, share_access,
                state, share_stopped_at, created_at, updated_at FROM held_offers;
            DROP TABLE held_offers;
            ALTER TABLE held_offers_new RENAME TO held_offers;
            CREATE INDEX held_offers_by_contact ON held_offers (contact_id, state);
            CREATE INDEX held_offers_finished ON held_offers (updated_at) WHERE state IN ('delivered', 'accepted', 'declined', 'cancelled', 'undeliverable');
            """),
        // When another key last answered at a contact's address (a reinstalled device: `ContactReachability`'s
        // "no longer recognized").
        Migration("grants-006-contact-replaced", sql: """
            ALTER TABLE contacts ADD COLUMN replaced_at INTEGER;
            """),
    ]
}
