import Foundation

/// Gives back the resident pages a long-running process touched once while starting: the clean pages of its
/// read-only file mappings (the executable's and the shared libraries' code, symbol and relocation tables).
///
/// Most of a just-started watcher's resident set is such pages (docs/roles/homeserver.md, "The watcher's memory"): the
/// dynamic loader reads every library's relocation and symbol tables, and the Swift runtime's and Foundation's
/// start-up code runs once. They are page-cache pages, identical to the files, so dropping this process's
/// page-table entries for them (`madvise(MADV_DONTNEED)`) loses nothing: a page used again is mapped again from
/// the page cache (a minor fault), or read from the file if the kernel has evicted it meanwhile.
///
/// Only mappings that are safe to drop are touched: backed by a file, not writable, and holding no private
/// (anonymous) page — `madvise(2)`: "for private mappings … the pages will be repopulated from the up-to-date
/// contents of the underlying mapped file", so a mapping whose pages were written (relocated data made read-only
/// afterwards) keeps its pages. Writable and anonymous memory (the heap, stacks) is never touched.
enum ResidentPages {
    /// One mapping of `/proc/self/smaps` that may be dropped.
    struct Mapping: Equatable {
        var start: UInt
        var end: UInt
    }

    /// The droppable mappings in `smaps` (the text of `/proc/self/smaps`): file-backed, without `w`, with
    /// `Anonymous: 0 kB`.
    static func droppable(smaps: String) -> [Mapping] {
        var result: [Mapping] = []
        var current: Mapping?
        var currentAnonymous: Int?
        func close() {
            if let mapping = current, currentAnonymous == 0 { result.append(mapping) }
            current = nil
            currentAnonymous = nil
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.last != ":", first.contains("-") {
                // A mapping's header: "start-end perms offset dev inode [path]".
                close()
                let bounds = first.split(separator: "-")
                guard fields.count >= 6, bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                      start < end, !fields[1].contains("w"), fields[5].hasPrefix("/") else { continue }
                current = Mapping(start: start, end: end)
            } else if current != nil, first == "Anonymous:", fields.count >= 2 {
                currentAnonymous = Int(fields[1])
            }
        }
        close()
        return result
    }

    /// Drops this process's page-table entries of its droppable mappings; returns how many mappings were given back.
    @discardableResult
    static func release() -> Int {
        guard let smaps = readAll("/proc/self/smaps") else { return 0 }
        var released = 0
        for mapping in droppable(smaps: smaps) {
            guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(address, Int(mapping.end - mapping.start), Int32(MADV_DONTNEED)) == 0 { released += 1 }
        }
        return released
    }

    /// The whole text of a `/proc` file, read until end of file (its size shows as 0, and one read returns one page).
    static func readAll(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
