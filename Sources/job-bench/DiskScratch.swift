import CShims
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A scratch folder for a benchmark's store on a real disk, never a memory filesystem, and what that disk can do.
///
/// A store on tmpfs never waits for a flush, so a server that commits each request alone looks fast there and slow
/// on an operator's disk. The folder is `$TMPDIR` (or /tmp) when that is a disk, else under the checkout's
/// `.build/`; `--store-dir` chooses it. The filesystem is named from `statfs(2)`'s `f_type`, and the disk's
/// flushes per second are measured in the same folder with a write + `fdatasync` loop, the way SQLite's WAL commits
/// flush (`synchronous = FULL`).
struct DiskScratch {
    let path: String
    let filesystem: String

    /// `statfs` `f_type` magic numbers (linux/magic.h) of the filesystems a bench meets.
    static let names: [Int: String] = [0xEF53: "ext4", 0x5846_5342: "xfs", 0x9123_683E: "btrfs", 0x0102_1994: "tmpfs", 0x8584_58F6: "ramfs",
                                       0x794C_7630: "overlayfs", 0x6969: "nfs", 0xF2F5_2010: "f2fs", 0x2FC1_2FC1: "zfs"]
    static let memoryFilesystems: Set<String> = ["tmpfs", "ramfs"]

    /// The filesystem holding `path`, by name (`0x…` when unknown).
    static func filesystem(of path: String) -> String {
        let type = shim_filesystem_type(path)
        guard type != -1 else { return "unknown" }
        return names[type] ?? "0x" + String(UInt32(truncatingIfNeeded: type), radix: 16)
    }

    /// A fresh folder named for `label` under `base` (or the default place); refuses a memory filesystem.
    static func make(_ label: String, base: String?) throws -> DiskScratch {
        var candidates: [String] = []
        if let base { candidates = [base] } else {
            candidates.append(ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
            let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
            candidates.append(checkout + "/.build")
        }
        for folder in candidates {
            let kind = filesystem(of: folder)
            if memoryFilesystems.contains(kind) { continue }
            let path = (folder.hasSuffix("/") ? String(folder.dropLast()) : folder) + "/job-bench-\(label)-\(getpid())"
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return DiskScratch(path: path, filesystem: kind)
        }
        throw BenchUsageError(message: "\(candidates.joined(separator: " and ")) \(candidates.count == 1 ? "is" : "are") on a memory filesystem; give --store-dir a folder on a disk")
    }

    /// Flushes a second this disk does: 4 KiB written then `fdatasync`ed, over and over, for `seconds`.
    func flushesPerSecond(seconds: Double = 1.5) throws -> Double {
        let file = path + "/fsync-probe"
        let fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw BenchFailure("cannot create \(file)") }
        defer { close(fd); unlink(file) }
        var block = [UInt8](repeating: 0x5a, count: 4096)
        // Written and flushed once first, so the loop overwrites (as a WAL in use does) and never grows the file.
        let whole = [UInt8](repeating: 0, count: 256 * 4096)
        guard write(fd, whole, whole.count) == whole.count, fsync(fd) == 0 else { throw BenchFailure("cannot write \(file)") }
        let start = DispatchTime.now()
        var count = 0
        var elapsed = 0.0
        repeat {
            block[0] = UInt8(truncatingIfNeeded: count)
            // A WAL is written from its start again after each checkpoint: cycle through 1 MiB.
            let offset = off_t((count % 256) * 4096)
            guard pwrite(fd, block, block.count, offset) == block.count, fdatasync(fd) == 0 else { throw BenchFailure("write or fdatasync failed in \(path)") }
            count += 1
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        } while elapsed < seconds
        return Double(count) / elapsed
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
