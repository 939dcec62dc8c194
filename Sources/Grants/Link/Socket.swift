import CShims
import Foundation
import Glibc
import Runner

/// The few POSIX socket calls the link needs: connect by a deadline, listen, accept, wait for readiness by a deadline.
enum Socket {
    /// Connects to `address` by `deadline` (non-blocking connect + poll), trying each resolved address; `unreachable`
    /// when none answers by then. The socket returned stays non-blocking.
    static func connect(_ address: LinkAddress, until deadline: Date) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address.host, String(address.port), &hints, &results) == 0, let first = results else {
            throw LinkFailure.unreachable
        }
        defer { freeaddrinfo(first) }
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
                    rc = -1          // no answer to the connect in time: nothing answers there
                }
            }
            if rc == 0 { return fd }
            Foundation.close(fd)
            if Date() >= deadline { throw LinkFailure.unreachable }
        }
        throw LinkFailure.unreachable
    }

    /// Makes reads and writes on `fd` return at once instead of blocking (the link waits with `wait(_:for:until:)`).
    static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Waits until `fd` is ready for `events` (POLLIN, POLLOUT), or throws `timeout` at `deadline` and `stopped`
    /// once SIGTERM/SIGINT was recorded. Waits in slices of at most 250 ms so a stopping process is heard.
    static func wait(_ fd: Int32, for events: Int16, until deadline: Date) throws {
        while true {
            if shim_termination_signal() != 0 { throw LinkFailure.stopped }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw LinkFailure.timeout }
            var pfd = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&pfd, 1, Int32(min(250, (remaining * 1000).rounded(.up))))
            if ready > 0 { return }          // readable, writable, hung up or failed: the next call finds out which
            if ready < 0 && errno != EINTR { throw LinkFailure.io }
        }
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
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0, Foundation.listen(fd, SOMAXCONN) == 0 else {
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
        acceptWithSource(listener, waitMilliseconds: waitMilliseconds)?.fd
    }

    /// Like `accept`, also returning where the connection came from, grouped for per-source caps.
    static func acceptWithSource(_ listener: Int32, waitMilliseconds: Int32) -> (fd: Int32, source: LinkSource)? {
        var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, waitMilliseconds) == 1 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
        }
        guard fd >= 0 else {
            // Out of descriptors (EMFILE/ENFILE) leaves the connection queued; pause instead of spinning on it.
            if errno == EMFILE || errno == ENFILE { usleep(50_000) }
            return nil
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return (fd, LinkSource(storage))
    }
}
