#if canImport(Glibc)
import Glibc
#endif
import NetAddress

/// The listening TCP socket the server accepts on: bound here from `--listen HOST:PORT`, or handed over by
/// systemd socket activation (`LISTEN_FDS`, `LISTEN_PID`; the first descriptor is 3).
package struct ListeningSocket: Sendable {
    package let descriptor: Int32
    /// The bound port (the one picked by the kernel when 0 was asked for).
    package let port: Int

    /// Why no socket could be had; the message names the address or variable, nothing else.
    package struct Failure: Error, Sendable {
        package let message: String
    }

    /// Binds and listens on a parsed `--listen` address (its host an IPv4 or IPv6 literal; port 0 picks a free port).
    package static func bind(_ address: SocketAddress, backlog: Int32 = 1024) throws -> ListeningSocket {
        try bind(host: address.host, port: Int(address.port), backlog: backlog)
    }

    /// Binds and listens on `host:port` (an IPv4 or IPv6 literal; port 0 picks a free port).
    package static func bind(host: String, port: Int, backlog: Int32 = 1024) throws -> ListeningSocket {
        var storage = sockaddr_storage()
        var length: socklen_t
        let family: Int32
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw Failure(message: "--listen needs an IP address and a port") }
            withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw Failure(message: "--listen needs an IP address and a port") }
            withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(message: "cannot create a socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
            close(fd)
            throw Failure(message: "cannot listen on the --listen address (in use, or not an address of this host)")
        }
        return ListeningSocket(descriptor: fd, port: boundPort(fd))
    }

    /// The socket systemd passed (`LISTEN_PID` is this process and `LISTEN_FDS` ≥ 1), or nil when none was.
    package static func fromSystemd(environment: [String: String], pid: Int32 = getpid()) throws -> ListeningSocket? {
        guard let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 else { return nil }
        guard environment["LISTEN_PID"].flatMap(Int32.init) == pid else { return nil }
        guard count == 1 else { throw Failure(message: "LISTEN_FDS must be 1: serve-relay.socket has one ListenStream=") }
        let fd: Int32 = 3
        var type: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0, type == Int32(SOCK_STREAM.rawValue) else {
            throw Failure(message: "the socket systemd passed is not a stream socket")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return ListeningSocket(descriptor: fd, port: boundPort(fd))
    }

    private static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard ok == 0 else { return 0 }
        if Int32(storage.ss_family) == AF_INET6 {
            return withUnsafeBytes(of: storage) { Int(UInt16(bigEndian: $0.load(as: sockaddr_in6.self).sin6_port)) }
        }
        return withUnsafeBytes(of: storage) { Int(UInt16(bigEndian: $0.load(as: sockaddr_in.self).sin_port)) }
    }
}
