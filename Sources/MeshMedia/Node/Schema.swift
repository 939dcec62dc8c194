import Store

/// The mesh node's tables. Secrets (private keys, Noise session state, the identity cache, pins, queued file
/// content) are sealed with the store keyring; peers are looked up by blind index.
///
/// The emulated radio: `mesh_outbox` holds the frames this node put on the air (already encoded and
/// fragmented to the 512-byte MTU), `mesh_carried` records which neighbour each frame was carried to by
/// `job mesh exchange`, and `mesh_inbox` holds frames heard from neighbours until `media-inbox` processes them.
enum MeshSchema {
    static let migrations = [
        Migration("meshmedia-001-node", sql: """
        CREATE TABLE mesh_node (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            peer_id BLOB NOT NULL,
            noise_public BLOB NOT NULL,
            signing_public BLOB NOT NULL,
            sealed_noise_private BLOB NOT NULL,
            sealed_signing_seed BLOB NOT NULL,
            nickname TEXT NOT NULL,
            emulate TEXT NOT NULL DEFAULT 'current' CHECK (emulate IN ('current', 'prerelease-ios', 'older-client')),
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_peers (
            peer_index BLOB PRIMARY KEY,
            sealed BLOB NOT NULL,
            updated_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_pins (
            fingerprint_index BLOB PRIMARY KEY,
            sealed BLOB NOT NULL,
            pinned_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_sessions (
            peer_index BLOB PRIMARY KEY,
            state TEXT NOT NULL CHECK (state IN ('handshaking', 'established')),
            sealed BLOB NOT NULL,
            started_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_outbox (
            id INTEGER PRIMARY KEY,
            frame BLOB NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_carried (
            frame_id INTEGER NOT NULL REFERENCES mesh_outbox(id) ON DELETE CASCADE,
            neighbour BLOB NOT NULL,
            carried_at INTEGER NOT NULL,
            PRIMARY KEY (frame_id, neighbour)
        ) STRICT;
        CREATE TABLE mesh_inbox (
            id INTEGER PRIMARY KEY,
            frame BLOB NOT NULL,
            received_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_seen (
            packet_hash BLOB PRIMARY KEY,
            seen_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX mesh_seen_by_time ON mesh_seen(seen_at);
        CREATE TABLE mesh_fragments (
            set_key BLOB NOT NULL,
            idx INTEGER NOT NULL,
            total INTEGER NOT NULL,
            original_type INTEGER NOT NULL,
            data BLOB NOT NULL,
            first_at INTEGER NOT NULL,
            PRIMARY KEY (set_key, idx)
        ) STRICT;
        CREATE TABLE mesh_sends (
            id INTEGER PRIMARY KEY,
            peer_index BLOB NOT NULL,
            sealed BLOB,
            consent INTEGER NOT NULL DEFAULT 0 CHECK (consent IN (0, 1)),
            status TEXT NOT NULL CHECK (status IN ('queued', 'waiting', 'sent', 'failed')),
            form TEXT CHECK (form IN ('encrypted', 'legacy')),
            reason TEXT,
            fragments INTEGER,
            content_bytes INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            waiting_at INTEGER
        ) STRICT;
        CREATE INDEX mesh_sends_open ON mesh_sends(status) WHERE status IN ('queued', 'waiting');
        CREATE TABLE mesh_deliveries (
            media_id TEXT PRIMARY KEY,
            form TEXT NOT NULL CHECK (form IN ('encrypted', 'alias', 'legacy')),
            sender_index BLOB NOT NULL,
            bytes INTEGER NOT NULL,
            delivered_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE mesh_builds (
            id INTEGER PRIMARY KEY,
            platform TEXT NOT NULL CHECK (platform IN ('ios', 'android')),
            version TEXT NOT NULL,
            channel TEXT NOT NULL CHECK (channel IN ('testflight', 'internal', 'beta', 'release')),
            emitted_alias INTEGER NOT NULL CHECK (emitted_alias IN (0, 1)),
            expires_at INTEGER,
            created_at INTEGER NOT NULL,
            UNIQUE (platform, version, channel)
        ) STRICT;
        CREATE TABLE mesh_policy (
            platform TEXT PRIMARY KEY CHECK (platform IN ('ios', 'android')),
            min_version TEXT NOT NULL,
            updated_at INTEGER NOT NULL
        ) STRICT;
        """),
        // Send states say no more than is known: `transmitted` (its frames were handed to the radio, the outbox) and
        // `carried` (every frame reached at least one neighbour); the mesh gives no delivery receipt. Frames
        // remember the send they belong to so `mesh exchange` can tell when a send is carried.
        Migration("meshmedia-002-send-states", sql: """
        CREATE TABLE mesh_sends_v2 (
            id INTEGER PRIMARY KEY,
            peer_index BLOB NOT NULL,
            sealed BLOB,
            consent INTEGER NOT NULL DEFAULT 0 CHECK (consent IN (0, 1)),
            status TEXT NOT NULL CHECK (status IN ('queued', 'waiting', 'transmitted', 'carried', 'failed')),
            form TEXT CHECK (form IN ('encrypted', 'legacy')),
            reason TEXT,
            fragments INTEGER,
            content_bytes INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            waiting_at INTEGER
        ) STRICT;
        INSERT INTO mesh_sends_v2 (id, peer_index, sealed, consent, status, form, reason, fragments, content_bytes, created_at, updated_at, waiting_at)
            SELECT id, peer_index, sealed, consent, CASE status WHEN 'sent' THEN 'transmitted' ELSE status END, form, reason, fragments,
                   content_bytes, created_at, updated_at, waiting_at FROM mesh_sends;
        DROP TABLE mesh_sends;
        ALTER TABLE mesh_sends_v2 RENAME TO mesh_sends;
        CREATE INDEX mesh_sends_open ON mesh_sends(status) WHERE status IN ('queued', 'waiting');
        CREATE INDEX mesh_sends_transmitted ON mesh_sends(id) WHERE status = 'transmitted';
        ALTER TABLE mesh_outbox ADD COLUMN send_id INTEGER;
        CREATE INDEX mesh_outbox_by_send ON mesh_outbox(send_id) WHERE send_id IS NOT NULL;
        """),
        // Issue 11 item 7: a frame a pass died on is counted (`attempts`), and a frame that cannot be processed is
        // moved aside into `mesh_inbox_quarantine` instead of blocking the inbox.
        Migration("meshmedia-010-inbox-quarantine", sql: """
        ALTER TABLE mesh_inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE mesh_inbox_quarantine (
            id INTEGER PRIMARY KEY,
            frame BLOB NOT NULL,
            reason TEXT NOT NULL CHECK (reason IN ('failed', 'interrupted')),
            received_at INTEGER NOT NULL,
            quarantined_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX mesh_inbox_quarantine_by_time ON mesh_inbox_quarantine(quarantined_at);
        """),
        // Issue 11 item 10: frames that carry a file in the clear (signed legacy fileTransfer and its fragments) name
        // the neighbour they are handed over to (`handover_to`: deleted once carried there) and expire early.
        Migration("meshmedia-011-outbox-handover", sql: """
        ALTER TABLE mesh_outbox ADD COLUMN handover_to BLOB;
        ALTER TABLE mesh_outbox ADD COLUMN expires_at INTEGER;
        CREATE INDEX mesh_outbox_by_expiry ON mesh_outbox(expires_at) WHERE expires_at IS NOT NULL;
        """),
        // Issue 16 item 10: received files keep their metadata (sender, name, MIME type, declared size), sealed to
        // the media id, and stay new (`seen_at` NULL) until exported.
        Migration("meshmedia-020-received-files", sql: """
        ALTER TABLE mesh_deliveries ADD COLUMN sealed_meta BLOB;
        ALTER TABLE mesh_deliveries ADD COLUMN seen_at INTEGER;
        """),
        // Issue 16 item 12: the outbox pass announces on a cadence (`announced_at`), and a waiting send tracks the
        // handshake's progress across passes (`proof_token`: the session state last seen; `proof_stalled_passes`).
        Migration("meshmedia-021-cadence", sql: """
        ALTER TABLE mesh_node ADD COLUMN announced_at INTEGER;
        ALTER TABLE mesh_sends ADD COLUMN proof_token BLOB;
        ALTER TABLE mesh_sends ADD COLUMN proof_stalled_passes INTEGER NOT NULL DEFAULT 0;
        """),
        // Reassembly keeps one row per set in progress (its total, type, fragments held, bytes and first-heard time) so
        // adding a fragment never re-reads the set, and a full table evicts a set instead of refusing new ones. Sets in
        // progress before the upgrade are dropped (they live 30 s).
        Migration("meshmedia-024-fragment-sets", sql: """
        DELETE FROM mesh_fragments;
        CREATE TABLE mesh_fragment_sets (
            set_key BLOB PRIMARY KEY,
            sender BLOB NOT NULL,
            total INTEGER NOT NULL,
            original_type INTEGER NOT NULL,
            have INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            first_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX mesh_fragment_sets_by_sender ON mesh_fragment_sets(sender, first_at);
        CREATE INDEX mesh_fragment_sets_by_age ON mesh_fragment_sets(first_at);
        """),
    ]
}
