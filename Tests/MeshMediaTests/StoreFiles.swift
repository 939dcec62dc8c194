import Foundation

/// The bytes a store leaves on disk — the database file, its WAL and its shared-memory index — for tests that
/// prove something is gone from all of them.
enum StoreFiles {
    static let suffixes = ["", "-wal", "-shm"]

    /// Each existing file of the store at `path`, by suffix.
    static func contents(_ path: String) -> [(suffix: String, bytes: [UInt8])] {
        suffixes.compactMap { suffix in FileManager.default.contents(atPath: path + suffix).map { (suffix, [UInt8]($0)) } }
    }

    /// The files of the store at `path` (by suffix) that contain `needle`.
    static func holding(_ needle: [UInt8], in path: String) -> [String] {
        contents(path).filter { AtRestTests.contains($0.bytes, needle) }.map { "store\($0.suffix)" }
    }

    /// Slices of `content` (`length` bytes every `stride`) to look for: a file cut into fragments still shows most
    /// of them whole inside one fragment.
    static func probes(of content: [UInt8], length: Int = 24, stride step: Int = 97) -> [[UInt8]] {
        Swift.stride(from: 0, to: content.count - length, by: step).map { Array(content[$0..<($0 + length)]) }
    }
}
