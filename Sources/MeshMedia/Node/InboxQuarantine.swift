import Runner
import Store

/// Keeps one frame from blocking `media-inbox`: frames are marked as attempted before they are processed, and a frame
/// that cannot be processed is moved aside into `mesh_inbox_quarantine`.
///
/// - A frame whose processing throws because of the frame (a decoding, cryptographic or constraint failure) is
///   quarantined as `failed` in its own transaction; the frames behind it are processed.
/// - A frame that passes started alone and never finished twice — the process died on it each time: a crash, an
///   out-of-memory kill — is quarantined unprocessed as `interrupted` when the next pass reaches it. A pass that
///   died once on a frame alone (a kill that happened to land there, a restart killed again at once) proves nothing
///   about the frame: it is processed again. `attempts` holds 1 for a batch the frame shared (a batch is tried once)
///   plus 2 for each time it was started alone, so a frame that merely shared a batch with a poison frame, or whose
///   pass was killed once, is still processed on the next pass.
/// - Failures of the store or the environment (busy, disk full, I/O, a media folder that cannot be written) are not
///   the frame's fault: its mark is undone and the error fails the pass (exit 75 or 73), so the frame is retried.
///
/// Quarantined frames are kept `retentionMilliseconds` for inspection, then deleted; panic wipe deletes them too.
struct InboxQuarantine {
    let database: Database
    let now: Int64

    static let retentionMilliseconds: Int64 = 86_400_000
    /// Passes that died on a frame alone after which it is not processed again.
    static let maxAttempts = 2
    /// What one attempt alone adds to `attempts` (a batch adds 1).
    static let aloneMark = 2

    enum Reason: String { case failed, interrupted }

    /// One row of `mesh_inbox`.
    struct Frame {
        var id: Int64
        var bytes: [UInt8]
        var attempts: Int
        var receivedAt: Int64

        init(row: Row) throws {
            id = try row.get(0, as: Int64.self)
            bytes = try row.get(1, as: [UInt8].self)
            attempts = try row.get(2, as: Int.self)
            receivedAt = try row.get(3, as: Int64.self)
        }
    }

    /// True when `error` comes from the frame being processed rather than from the store or the environment.
    static func isCausedByFrame(_ error: any Error) -> Bool {
        switch error {
        case let store as StoreError: return !(store.isStoreUnusable || store.kind == .busy || store.kind == .interrupted)
        case is JobError: return false
        default: return true
        }
    }

    /// Runs `body` (one transaction over `frames`) with each frame marked attempted first. Nil when it failed because
    /// of a frame: the marks stay and the caller replays the frames alone.
    func attempt<T>(_ frames: [Frame], _ body: () throws -> T) throws -> T? {
        let ids = frames.map(\.id)
        try mark(ids, by: 1)
        do {
            return try body()
        } catch where Self.isCausedByFrame(error) {
            return nil
        } catch {
            try? mark(ids, by: -1)
            throw error
        }
    }

    /// Runs `body` (one transaction over `frame` alone). Nil when the frame was quarantined: unprocessed because
    /// a pass already died on it alone, or because `body` failed because of it.
    func attemptAlone<T>(_ frame: Frame, _ body: () throws -> T) throws -> T? {
        guard frame.attempts / Self.aloneMark < Self.maxAttempts else {
            try move(frame, reason: .interrupted)
            return nil
        }
        try mark([frame.id], by: Self.aloneMark)
        do {
            return try body()
        } catch where Self.isCausedByFrame(error) {
            try move(frame, reason: .failed)
            return nil
        } catch {
            try? mark([frame.id], by: -Self.aloneMark)
            throw error
        }
    }

    /// Deletes quarantined frames past their retention (inside the caller's write transaction).
    func prune() throws {
        _ = try database.execute("DELETE FROM mesh_inbox_quarantine WHERE quarantined_at < ?", [now - Self.retentionMilliseconds])
    }

    private func mark(_ ids: [Int64], by step: Int) throws {
        try database.write { db in
            for id in ids { _ = try db.execute("UPDATE mesh_inbox SET attempts = max(0, attempts + ?) WHERE id = ?", [step, id]) }
        }
    }

    private func move(_ frame: Frame, reason: Reason) throws {
        try database.write { db in
            _ = try db.execute("""
                INSERT INTO mesh_inbox_quarantine (frame, reason, received_at, quarantined_at) VALUES (?, ?, ?, ?)
                """, [frame.bytes, reason.rawValue, frame.receivedAt, now])
            _ = try db.execute("DELETE FROM mesh_inbox WHERE id = ?", [frame.id])
        }
    }
}
