import Runner
import Store

/// `PRAGMA secure_delete=ON` for the mesh node's connection: what it deletes is overwritten with zeros in the store
/// file (cells, free blocks and freed pages) instead of lingering in free space.
///
/// SQLite's default is a compile-time option (`SQLITE_SECURE_DELETE`), so it is set explicitly on every connection
/// that deletes keys, sessions or frames carrying a file in the clear: panic wipe, `media-inbox`, `media-outbox` and
/// `mesh exchange`. It covers the main file; WAL frames are covered by a truncating checkpoint (`PanicWipe`) or by
/// SQLite's checkpoint when the last connection closes.
enum SecureDelete {
    static func enable(_ db: Database) throws {
        try db.execute("PRAGMA secure_delete = ON")
        guard (try db.scalar("PRAGMA secure_delete") as Int?) == 1 else {
            throw JobError.internal("SQLite refused PRAGMA secure_delete = ON")
        }
    }
}
