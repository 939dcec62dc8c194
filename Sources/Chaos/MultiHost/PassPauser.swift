import Foundation
import Synchronization

/// Long passes on purpose: SIGSTOPs a running `send-wakeups` pass once it has a connection open to the APNs
/// stand-in (it is about to push, or pushing) and SIGCONTs it some tens of seconds later, as a stalled host (a
/// paused VM, a frozen container, heavy swapping) leaves a pass still pushing long after it started. The other
/// hosts' passes go on meanwhile, so a pass that resumes more than one debounce window (30 s) after it started
/// meets tokens other passes may have claimed and pushed in between: what the judge's "none doubled" counts.
///
/// At most `maxPaused` passes are stopped at once (so some host always runs); the killer does not pick a paused
/// pass (`pausedPIDs`), so a pause nearly always ends in a resume.
package final class PassPauser: Sendable {
    let children: ChaosChildren
    /// The stand-in's loopback port: a pass with an established TCP connection to it is pushing.
    let apnsPort: Int
    private let paused = Mutex<[pid_t: Date]>([:])

    init(children: ChaosChildren, apnsPort: Int) {
        self.children = children
        self.apnsPort = apnsPort
    }

    /// The passes stopped right now.
    func pausedPIDs() -> Set<pid_t> { paused.withLock { Set($0.keys) } }

    /// What the pauser did.
    struct Figures: Sendable {
        var pauses = 0
        var shortest = Double.infinity
        var longest = 0.0
    }

    /// Pauses a pushing pass every `every` seconds (drawn uniformly) for `seconds` (drawn uniformly) while `going`
    /// is set; then resumes the passes still stopped when their time is up and returns. `note` hears of each pause.
    func run(every: ClosedRange<Double>, seconds: ClosedRange<Double>, maxPaused: Int, while going: ChaosFlag, seed: UInt64,
             note: (String) -> Void = { _ in }) -> Figures {
        var dice = ChaosRandom(seed: seed)
        var figures = Figures()
        var nextPause = Date().addingTimeInterval(Double.random(in: every, using: &dice))
        while going.isSet || !paused.withLock({ $0.isEmpty }) {
            let now = Date()
            let due = paused.withLock { list in list.filter { $0.value <= now }.map(\.key) }
            for pid in due {
                children.signal(pid, SIGCONT)
                _ = paused.withLock { $0.removeValue(forKey: pid) }
            }
            let looking = going.isSet && now >= nextPause && paused.withLock({ $0.count }) < maxPaused
            if looking {
                // Stopped as soon as it is seen connected, most of its pushes still to go; kept stopped only if it still
                // holds the connection once stopped (it may have just finished). The machine's TCP table is costly to
                // read (every socket of the other work on it), so it is read only while a pass holds more sockets than
                // its store connection (libcurl's are open: it is pushing).
                let stopped = pausedPIDs()
                let candidates = children.running(.sendWakeups).filter { !stopped.contains($0) }
                    .map { ($0, Self.sockets(of: $0)) }.filter { $0.1.count > 1 }
                let inodes = candidates.isEmpty ? [] : Self.connections(toPort: apnsPort)
                if let pid = candidates.first(where: { !$0.1.isDisjoint(with: inodes) })?.0, children.signal(pid, SIGSTOP) {
                    if Self.isConnected(pid, toPort: apnsPort) {
                        let length = Double.random(in: seconds, using: &dice)
                        paused.withLock { $0[pid] = Date().addingTimeInterval(length) }
                        figures.pauses += 1
                        figures.shortest = min(figures.shortest, length)
                        figures.longest = max(figures.longest, length)
                        note("a pass SIGSTOPped with its APNs connection open, for \(Int(length)) s")
                        nextPause = Date().addingTimeInterval(Double.random(in: every, using: &dice))
                    } else {
                        children.signal(pid, SIGCONT)
                    }
                }
            }
            usleep(looking ? 1_000 : 5_000)
        }
        return figures
    }

    /// Whether `pid` has an established TCP connection to `127.0.0.1:port`.
    package static func isConnected(_ pid: pid_t, toPort port: Int) -> Bool {
        holds(pid, anyOf: connections(toPort: port))
    }

    /// The socket inodes of the established TCP connections to `127.0.0.1:port` (`/proc/net/tcp`: this network
    /// namespace, the children's too). The table holds every socket of the machine's other work too, so it is
    /// searched as bytes for the remote address followed by the state `01` (established), not split into lines.
    static func connections(toPort port: Int) -> Set<String> {
        guard let table = readWhole("/proc/net/tcp") else { return [] }
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        let needle = String(format: " 0100007F:%04X 01 ", port)
        var inodes = Set<String>()
        let terminated = table + [0]
        terminated.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress else { return }
            base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { text in
                var from = UnsafePointer(text)
                while let hit = strstr(from, needle) {
                    // The line's rest: tx:rx tr:when retrnsmt uid timeout inode …
                    var end = hit + needle.utf8.count
                    while end.pointee != 0 && end.pointee != 0x0A { end += 1 }
                    let rest = UnsafeBufferPointer(start: UnsafeRawPointer(hit + needle.utf8.count).assumingMemoryBound(to: UInt8.self),
                                                   count: (hit + needle.utf8.count).distance(to: end))
                    let fields = rest.split(separator: UInt8(ascii: " "))
                    if fields.count > 5 { inodes.insert(String(decoding: fields[5], as: UTF8.self)) }
                    from = UnsafePointer(end)
                }
            }
        }
        return inodes
    }

    /// A `/proc` file to its end: its size reads 0, and `String(contentsOfFile:)` stops after the first page.
    static func readWhole(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? bytes : nil }
            bytes += chunk[0..<n]
        }
    }

    /// Whether one of `pid`'s file descriptors is a socket in `inodes`.
    static func holds(_ pid: pid_t, anyOf inodes: Set<String>) -> Bool {
        !inodes.isEmpty && !sockets(of: pid).isDisjoint(with: inodes)
    }

    /// The socket inodes of `pid`'s file descriptors (`/proc/<pid>/fd/*` → `socket:[inode]`).
    static func sockets(of pid: pid_t) -> Set<String> {
        let directory = "/proc/\(pid)/fd"
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var inodes = Set<String>()
        var link = [CChar](repeating: 0, count: 64)
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name.first?.isNumber == true else { continue }
            let length = readlink(directory + "/" + name, &link, link.count - 1)
            guard length > 9 else { continue }
            let target = String(decoding: link[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasPrefix("socket:[") { inodes.insert(String(target.dropFirst(8).dropLast())) }
        }
        return inodes
    }
}
