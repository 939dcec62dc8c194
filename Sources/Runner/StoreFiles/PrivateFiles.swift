import Foundation

/// Creates the store's folders and file private to the user whatever the umask: folders 0700, the store 0600.
/// SQLite gives the `-wal` and `-shm` files the store file's mode, so they are 0600 too.
package enum PrivateFiles {
    /// Creates `path`'s missing folders with mode 0700 (existing folders are left as they are).
    /// Works on the path's bytes: any shape (`x`, `0`, `d/s.sqlite`, `./x`, `//`, a trailing slash) is handled
    /// without Foundation's path helpers, one of which trapped on one-character paths.
    package static func createFolders(for path: String) throws {
        guard let folder = parentFolder(of: path) else { return }
        var missing: [String] = []
        var current: String? = folder
        while let candidate = current, !FileManager.default.fileExists(atPath: candidate) {
            missing.append(candidate)
            current = parentFolder(of: candidate)
        }
        for directory in missing.reversed() {
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw JobError.store("store-cannot-create", "cannot create the store's folder; check permissions or choose another --store")
            }
            chmod(directory, 0o700)
        }
    }

    /// The folder holding `path`, or nil when it is the current folder or the root (nothing to create).
    /// `a/b/c` → `a/b`, `/a` → nil, `a` → nil, `a//b/` → `a`.
    package static func parentFolder(of path: String) -> String? {
        var bytes = Array(path.utf8)
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        var end = slash
        while end > 0, bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        guard end > 0 else { return nil }
        let folder = String(decoding: bytes[..<end], as: UTF8.self)
        return folder == "." ? nil : folder
    }

    /// Creates the store file empty with mode 0600 when it does not exist; SQLite then writes into it.
    package static func createStoreFile(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        fchmod(fd, 0o600)
        close(fd)
    }

    /// True when a key file at `path` can be read by its group or others.
    package static func readableByOthers(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return info.st_mode & 0o077 != 0
    }

    /// What kind of file is at `path` (following symbolic links), or nil when nothing is there.
    package static func kind(_ path: String) -> FileKind? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// A file's kind as far as the store and its key care: a regular file, a folder, or anything else
    /// (a FIFO, a device such as `/dev/null`, a socket).
    package enum FileKind: Sendable { case regular, directory, other }
}
