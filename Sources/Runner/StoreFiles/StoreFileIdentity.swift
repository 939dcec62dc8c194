import Foundation
import Store

/// Which file a long-running server opened as its store: the device and inode of the store file and of its `-wal`.
///
/// A store deleted, moved aside or replaced by a copy (a backup restore) while a server runs leaves the server
/// writing into a file no path leads to, and a deleted `-wal` loses every commit still in it at the next crash.
/// Servers check `isStillAtPath()` on a timer and before acknowledging a write, and stop when it is false.
package struct StoreFileIdentity: Sendable, Equatable {
    struct FileID: Sendable, Equatable {
        let device: UInt64
        let inode: UInt64
    }

    let path: String
    let store: FileID
    let wal: FileID?

    /// The identity of the SQLite store at `path` now (its `-wal` only when it exists, as it does while a WAL-mode
    /// connection is open); nil for a PostgreSQL location or when the file is not there.
    package static func current(path: String) -> StoreFileIdentity? {
        guard Database.engine(forLocation: path) == .sqlite, let store = fileID(path) else { return nil }
        return StoreFileIdentity(path: path, store: store, wal: fileID(path + "-wal"))
    }

    /// False when the path no longer leads to the store file this identity was taken of, or its `-wal` was
    /// removed or replaced.
    package func isStillAtPath() -> Bool {
        guard StoreFileIdentity.fileID(path) == store else { return false }
        if let wal { return StoreFileIdentity.fileID(path + "-wal") == wal }
        return true
    }

    static func fileID(_ path: String) -> FileID? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The failure a server stops with when its store is no longer at its path (73).
    package static let replaced = JobError.store("store-replaced", "the store file (or its -wal) at the store path is no longer the one this server opened: it was deleted, moved or replaced; the server stopped so that nothing more is acknowledged into it — put the store back and start the server again")
}
