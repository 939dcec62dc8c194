import Runner
import Store

/// The watcher's columns of the helper's shared state row: whether it holds a wake-up back, and when it last said
/// it is alive. Written apart from the sweep's columns, so neither overwrites the other's.
enum WatcherPresence {
    /// Records that the watcher is alive at `now` and holds a wake-up back since `pendingSince` (nil: none).
    static func record(_ db: Database, now: Int64, pendingSince: Int64?) throws {
        try db.writeIfNeeded { db in
            try db.execute("""
                INSERT INTO relay_helper_state (id, watcher_pending_since, watcher_seen_at) VALUES (1, ?, ?)
                ON CONFLICT (id) DO UPDATE SET watcher_pending_since = excluded.watcher_pending_since, watcher_seen_at = excluded.watcher_seen_at
                """, [pendingSince, now])
        }
    }

    /// Records that the watcher stopped: nothing pending, and no longer alive.
    static func stopped(_ db: Database) throws {
        try db.writeIfNeeded { db in
            try db.execute("UPDATE relay_helper_state SET watcher_pending_since = NULL, watcher_seen_at = NULL WHERE id = 1")
        }
    }
}
