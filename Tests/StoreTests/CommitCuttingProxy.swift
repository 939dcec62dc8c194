import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A Unix-socket proxy in front of a PostgreSQL server that loses the answer to one `COMMIT`: it passes the
/// `cutAt`-th `COMMIT` to the server, lets the server finish it, and then closes both sides without passing the
/// server's reply on. The client sees its connection go during `COMMIT` while the transaction is committed — what
/// a network that fails at the wrong moment does. Every other byte goes through unchanged, both ways.
final class CommitCuttingProxy: Sendable {
    /// The folder holding the proxy's socket, named as the server's (`.s.PGSQL.<port>`): libpq's `host`.
    let directory: String
    private let upstream: String
    private let cutAt: Int
    private let listener: Int32
    private let state = Mutex(State())

    private struct State {
        var commits = 0
        var cuts = 0
        var stopped = false
    }

    /// How many `COMMIT`s went through, and whether the cut happened.
    var commitsSeen: Int { state.withLock { $0.commits } }
    var cuts: Int { state.withLock { $0.cuts } }

    /// A proxy for the server listening at `socketDirectory` on `port`, cutting the `cutAt`-th `COMMIT` (from 1).
    init(socketDirectory: String, port: Int, cutAt: Int) throws {
        directory = NSTemporaryDirectory() + "pgcut-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        upstream = socketDirectory + "/.s.PGSQL.\(port)"
        self.cutAt = cutAt
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.address(directory + "/.s.PGSQL.\(port)")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard listener >= 0, bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops accepting (connections already open keep running until either side closes).
    func stop() {
        let first = state.withLock { state -> Bool in defer { state.stopped = true }; return !state.stopped }
        if first { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
    }

    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes + [0])
        }
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.address(upstream)
            let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            guard connected == 0 else { close(client); close(server); continue }
            let link = Link(client: client, server: server)
            Thread { [self] in pumpFromClient(link) }.start()
            Thread { Self.pumpFromServer(link) }.start()
        }
    }

    /// One proxied connection; `cut` is set before the cut `COMMIT` is passed on, so its reply is never forwarded.
    private final class Link: Sendable {
        let client: Int32
        let server: Int32
        let cut = Atomic(false)
        private let pumpsDone = Atomic(0)
        init(client: Int32, server: Int32) { self.client = client; self.server = server }

        /// One pump ended: both sides are shut down, and the second pump to end closes the descriptors (so neither
        /// pump ever uses a descriptor number that was closed and reused).
        func pumpEnded() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
            if pumpsDone.add(1, ordering: .sequentiallyConsistent).newValue == 2 {
                close(client)
                close(server)
            }
        }
    }

    private func pumpFromClient(_ link: Link) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(link.client, &buffer, buffer.count)
            guard count > 0 else { break }
            let chunk = Array(buffer[0..<count])
            let cutting = chunk.contains(subsequence: Array("COMMIT".utf8)) && state.withLock { state in
                state.commits += 1
                guard state.commits == cutAt else { return false }
                state.cuts += 1
                return true
            }
            if cutting { link.cut.store(true, ordering: .sequentiallyConsistent) }
            guard Self.writeAll(link.server, chunk) else { break }
            if cutting {
                // The server commits and answers; the answer is dropped and the connection goes.
                usleep(300_000)
                break
            }
        }
        link.pumpEnded()
    }

    private static func pumpFromServer(_ link: Link) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(link.server, &buffer, buffer.count)
            guard count > 0 else { break }
            if link.cut.load(ordering: .sequentiallyConsistent) { continue }
            guard writeAll(link.client, Array(buffer[0..<count])) else { break }
        }
        link.pumpEnded()
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
