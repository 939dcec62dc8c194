import Foundation
import Glibc
@testable import Grants
import Testing
import TestSupport

/// Plain TCP sockets for playing slow and idle peers against a link listener, from any loopback address.
enum RawPeer {
    /// A TCP connection from `source` (127.0.0.x, port chosen by the kernel) to 127.0.0.1:`port`, blocking.
    static func connect(from source: String, to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, connected == 0 else { close(fd); throw TestFailure("cannot connect from \(source): errno \(errno)") }
        return fd
    }

    /// A listener on `host` (a loopback address), port chosen by the kernel, that never accepts: connections to it
    /// complete TCP and then hear nothing, ever.
    static func staller(on host: String) throws -> (fd: Int32, address: String) {
        let (fd, port) = try Socket.listen(try LinkAddress.parseListen("\(host):0"))
        return (fd, "\(host):\(port)")
    }

    /// True when a connection is waiting to be accepted on `listener` (someone dialled it).
    static func hasPendingConnection(_ listener: Int32) -> Bool {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) == 1
    }

    /// Writes `bytes`, ignoring failures (the peer may already have closed).
    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Whether the other side closed `fd` (end of stream or reset), waiting up to `seconds`; data it sends first
    /// (a TLS alert) is read and skipped.
    static func closedByPeer(_ fd: Int32, within seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(remaining * 1000) + 1) == 1 else { continue }
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
        }
    }

    /// True when the other side has neither sent anything nor closed `fd` yet.
    static func isOpen(_ fd: Int32) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) == 0
    }

    /// The start of a TLS ClientHello record (a 512-byte record is announced; the bytes never complete it).
    static let helloStart: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + [UInt8](repeating: 0x2a, count: 32)

    /// Sends `bytes` one at a time, `interval` apart, until the peer closes `fd` or `giveUpAfter` seconds pass;
    /// returns the seconds until the close was seen, or nil when the peer held on.
    static func dribble(_ bytes: [UInt8], every interval: TimeInterval, giveUpAfter: TimeInterval, write: ([UInt8]) throws -> Void,
                        closed: () -> Bool) -> TimeInterval? {
        let start = Date()
        var index = 0
        while Date().timeIntervalSince(start) < giveUpAfter {
            if closed() { return Date().timeIntervalSince(start) }
            if index < bytes.count {
                try? write([bytes[index]])
                index += 1
            }
            usleep(UInt32(interval * 1_000_000))
        }
        return nil
    }
}

extension LinkTestNode {
    /// Sets `link.*` or other settings in this node's store.
    func set(_ settings: [String: String]) throws {
        for (key, value) in settings { try ok(["settings", "set", key, value]) }
    }
}
