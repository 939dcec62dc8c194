import Foundation
import Glibc
import Runner

/// The few POSIX socket calls the link needs: connect with a deadline, listen, accept, per-socket timeouts.
enum Socket {
    /// Connects to `address` within `timeout` seconds (non-blocking connect + poll), trying each resolved address.
    static func connect(_ address: LinkAddress, timeout: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address.host, String(address.port), &hints, &results) == 0, let first = results else {
            throw LinkFailure.unreachable
        }
        defer { freeaddrinfo(first) }
        let deadline = Date().addingTimeInterval(TimeInterval(timeout))
        var failure = LinkFailure.unreachable
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var rc = Foundation.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            if rc != 0 && errno == EINPROGRESS {
                let remaining = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&pfd, 1, remaining)
                if ready == 1 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    rc = error == 0 ? 0 : -1
                } else {
                    failure = .timeout
                    rc = -1
                }
            }
            if rc == 0 {
                _ = fcntl(fd, F_SETFL, flags)
                return fd
            }
            Foundation.close(fd)
            if Date() >= deadline { throw LinkFailure.timeout }
        }
        throw failure
    }

    /// Sets send and receive timeouts so no read or write on `fd` blocks longer than `seconds`.
    static func setTimeouts(_ fd: Int32, seconds: Int) {
        var value = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// A listening socket bound to `address` (port 0 picks a free port); returns the fd and the bound port.
    static func listen(_ address: LinkAddress) throws -> (Int32, UInt16) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address.host, String(address.port), &hints, &results) == 0, let info = results else {
            throw JobError.usage("the --listen host cannot be resolved")
        }
        defer { freeaddrinfo(info) }
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
        guard fd >= 0 else { throw JobError.unavailable("listen-failed", "cannot create a listening socket") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, Foundation.listen(fd, 64) == 0 else {
            Foundation.close(fd)
            throw JobError.unavailable("listen-failed", "cannot listen on the --listen address (in use, or not this host's)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let port: UInt16 = withUnsafeMutablePointer(to: &storage) { pointer in
            _ = pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            if Int32(pointer.pointee.ss_family) == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, port)
    }

    /// Waits up to `milliseconds` (−1: forever) for a connection; nil on timeout or a signal.
    static func accept(_ listener: Int32, waitMilliseconds: Int32) -> Int32? {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, waitMilliseconds) == 1 else { return nil }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }
}
