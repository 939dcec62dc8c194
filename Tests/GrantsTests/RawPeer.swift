import CQUIC
import Cryptography
import Foundation
import Glibc
@testable import Grants
@testable import QUIC
import Testing
import TestSupport

/// Plain UDP sockets for playing silent, flooding and slow peers against the QUIC link, from any loopback address.
enum RawPeer {
    /// A UDP socket bound to `source` (127.0.0.x, port chosen by the kernel) and connected to 127.0.0.1:`port`.
    static func udp(from source: String, to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
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
        guard bound == 0, connected == 0 else { close(fd); throw TestFailure("cannot bind \(source): errno \(errno)") }
        return fd
    }

    /// A UDP socket on `host` (a loopback address), port chosen by the kernel, that never answers: a dial to it
    /// sends its Initial and hears nothing, ever.
    static func staller(on host: String) throws -> (fd: Int32, address: String) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, host, &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound else { throw TestFailure("cannot bind a UDP staller on \(host)") }
        return (fd, "\(host):\(UInt16(bigEndian: address.sin_port))")
    }

    /// True when a datagram is waiting on `fd` (someone dialled it).
    static func hasPendingConnection(_ fd: Int32) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) == 1
    }

    /// Sends one datagram, ignoring failures.
    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Whether any datagram arrives on `fd` within `seconds` (all waiting ones are read).
    static func answered(_ fd: Int32, within seconds: TimeInterval) -> Bool {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var ready: Int32
        repeat { ready = poll(&pfd, 1, Int32(seconds * 1000)) } while ready < 0 && errno == EINTR  // another test's SIGCHLD
        guard ready == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 2048)
        while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
        return true
    }

    /// Sends `bytes` one at a time, `interval` apart, until `closed()` or `giveUpAfter` seconds pass; returns the
    /// seconds until the close was seen, or nil when the peer held on.
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

/// A QUIC client that sends the first flight of a real handshake (a valid Initial) from a chosen loopback address
/// and then goes silent: to the server it is a half-open connection holding a slot until the handshake deadline.
/// It follows a Retry (as a real client at that address would) unless it plays a spoofer, which never hears
/// anything sent to "its" address.
final class HalfOpenPeer {
    let fd: Int32
    let followsRetry: Bool
    private let conn: OpaquePointer
    private let local: sockaddr_storage, remote: sockaddr_storage
    private let localLength: socklen_t, remoteLength: socklen_t
    private var flight: [[UInt8]] = []
    /// Retries received (and followed, when `followsRetry`).
    private(set) var retries = 0
    private static let identity: QUICIdentity = {
        let key = try! Ed25519PrivateKey.generate()
        return QUICIdentity(seed: key.seed.copyBytes(), publicKey: key.publicKey)!
    }()

    init(from source: String, to port: UInt16, expecting server: EndpointID, followsRetry: Bool = true) throws {
        let fd = try RawPeer.udp(from: source, to: port)
        var local = sockaddr_storage(), remote = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size), remoteLength = localLength
        withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &localLength) } }
        withUnsafeMutablePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getpeername(fd, $0, &remoteLength) } }
        let (finalLocal, finalRemote) = (localLength, remoteLength)
        let made: OpaquePointer? = HalfOpenPeer.withAddresses(local, remote) { l, r in
            vq_client_new(HalfOpenPeer.identity.creds, l, finalLocal, r, finalRemote, server.bytes, "/vnidrop/offer/1", 60_000, 60_000)
        }
        guard let made else { close(fd); throw TestFailure("cannot make a QUIC client") }
        self.fd = fd
        self.followsRetry = followsRetry
        self.local = local
        self.remote = remote
        self.localLength = localLength
        self.remoteLength = remoteLength
        conn = made
        writeFlight()
    }

    private static func withAddresses<T>(_ local: sockaddr_storage, _ remote: sockaddr_storage,
                                          _ body: (UnsafePointer<sockaddr>, UnsafePointer<sockaddr>) -> T) -> T {
        var (local, remote) = (local, remote)
        return withUnsafePointer(to: &local) { l in
            withUnsafePointer(to: &remote) { r in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) { lp in r.withMemoryRebound(to: sockaddr.self, capacity: 1) { body(lp, $0) } }
            }
        }
    }

    /// Sends whatever the client has to send now and keeps it as the flight `resend` repeats.
    private func writeFlight() {
        var out = [UInt8](repeating: 0, count: 1500)
        var written: [[UInt8]] = []
        while true {
            let count = vq_write(conn, &out, out.count)
            guard count > 0 else { break }
            written.append(Array(out[0..<count]))
        }
        if !written.isEmpty { flight = written }
        resend()
    }

    /// Sends the first flight again (a retransmission, as a client that is slow but alive would).
    func resend() { flight.forEach { RawPeer.send(fd, $0) } }

    /// Whether the server answered with its handshake (not merely a Retry) within `seconds`. A Retry is followed
    /// (the Initial sent again with its token) when `followsRetry`, and counted.
    func answered(within seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 2048)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(remaining * 1000) + 1) == 1 else { continue }
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { continue }
            // Long header, type Retry (0b11).
            guard buffer[0] & 0xf0 == 0xf0 else { return true }
            retries += 1
            guard followsRetry else { continue }
            let (localCopy, remoteCopy, localLength, remoteLength) = (local, remote, localLength, remoteLength)
            _ = HalfOpenPeer.withAddresses(localCopy, remoteCopy) { l, r in vq_read(conn, buffer, count, l, localLength, r, remoteLength) }
            writeFlight()
        }
    }

    deinit {
        vq_conn_free(conn)
        close(fd)
    }
}

extension LinkTestNode {
    /// Sets `link.*` or other settings in this node's store.
    func set(_ settings: [String: String]) throws {
        for (key, value) in settings { try ok(["settings", "set", key, value]) }
    }
}
