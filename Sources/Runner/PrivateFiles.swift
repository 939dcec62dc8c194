import Foundation

/// Creates the store's folders and file private to the user whatever the umask: folders 0700, the store 0600.
/// SQLite gives the `-wal` and `-shm` files the store file's mode, so they are 0600 too.
public enum PrivateFiles {
    /// Creates `path`'s missing folders with mode 0700 (existing folders are left as they are).
    public static func createFolders(for path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        guard !folder.isEmpty else { return }
        var missing: [String] = []
        var current = folder
        while !current.isEmpty, current != "/", !FileManager.default.fileExists(atPath: current) {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        for directory in missing.reversed() {
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw JobError.store("store-cannot-create", "cannot create the store's folder; check permissions or choose another --store")
            }
            chmod(directory, 0o700)
        }
    }

    /// Creates the store file empty with mode 0600 when it does not exist; SQLite then writes into it.
    public static func createStoreFile(_ path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        fchmod(fd, 0o600)
        close(fd)
    }

    /// True when a key file at `path` can be read by its group or others.
    public static func readableByOthers(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return info.st_mode & 0o077 != 0
    }
}
