import Foundation
import Glibc

/// Writes a received file so that it is on disk before the row naming it commits, and so that a pass killed while
/// writing leaves no copy of the content behind.
///
/// The content goes into an unnamed file in the media folder (`O_TMPFILE`): written, fsynced, then linked under its
/// final name, and the folder fsynced. A process killed before the link leaves only an unnamed inode, which the file
/// system frees; there is never a temporary name holding the content. On a file system without `O_TMPFILE` a named
/// temporary file (`.<name>.partial`, 0600) is used instead, and `removeLeftovers` (run by every pass before it
/// writes) deletes what a killed pass left there, as well as the `.dat.nosync…` temporaries of earlier versions.
enum DurableFile {
    struct Failure: Error {}

    static let partialSuffix = ".partial"
    /// `O_TMPFILE` (a macro Swift does not import): `__O_TMPFILE` is 020000000 on x86-64 and arm64, with O_DIRECTORY.
    static let openTemporaryFile: Int32 = 0o20000000 | O_DIRECTORY

    /// Writes `content` as `folder/name` (0600), replacing a file of that name; durable when it returns.
    static func write(_ content: [UInt8], folder: String, name: String) throws {
        let final = folder + "/" + name
        let unnamed = open(folder, openTemporaryFile | O_WRONLY | O_CLOEXEC, 0o600)
        if unnamed >= 0 {
            defer { close(unnamed) }
            try writeAll(content, to: unnamed)
            guard fsync(unnamed) == 0 else { throw Failure() }
            if unlink(final) != 0 && errno != ENOENT { throw Failure() }
            guard linkat(AT_FDCWD, "/proc/self/fd/\(unnamed)", AT_FDCWD, final, AT_SYMLINK_FOLLOW) == 0 else { throw Failure() }
        } else {
            guard errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL || errno == ENOENT && FileManager.default.fileExists(atPath: folder) else {
                throw Failure()
            }
            let temporary = folder + "/." + name + partialSuffix
            _ = unlink(temporary)
            let fd = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw Failure() }
            do {
                try writeAll(content, to: fd)
                guard fsync(fd) == 0 else { throw Failure() }
                close(fd)
            } catch {
                close(fd)
                _ = unlink(temporary)
                throw error
            }
            guard rename(temporary, final) == 0 else { _ = unlink(temporary); throw Failure() }
        }
        try syncFolder(folder)
    }

    /// Deletes temporary files a killed pass left in `folder`; returns how many.
    @discardableResult
    static func removeLeftovers(in folder: String) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(".") && (name.hasSuffix(partialSuffix) || name.contains(".nosync")) {
            if unlink(folder + "/" + name) == 0 { removed += 1 }
        }
        if removed > 0 { try? syncFolder(folder) }
        return removed
    }

    private static func writeAll(_ content: [UInt8], to fd: Int32) throws {
        try content.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 { if errno == EINTR { continue }; throw Failure() }
                offset += written
            }
        }
    }

    private static func syncFolder(_ folder: String) throws {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure() }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure() }
    }
}
