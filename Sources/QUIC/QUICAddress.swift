import Foundation
import Glibc

/// A UDP socket address (IPv4 or IPv6), as the kernel gives and takes it.
package struct QUICAddress: Sendable {
    package var storage: sockaddr_storage
    package var length: socklen_t

    package init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    package var family: Int32 { Int32(storage.ss_family) }

    /// The port, in host order.
    package var port: UInt16 {
        var copy = storage
        return withUnsafeBytes(of: &copy) { raw in
            family == AF_INET6 ? UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
                               : UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }

    /// Resolves `host` and `port` for UDP; every address found, IPv4 and IPv6. `passive` for a wildcard bind.
    package static func resolve(host: String, port: UInt16, passive: Bool = false) -> [QUICAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        if passive { hints.ai_flags = AI_PASSIVE }
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &results) == 0, let first = results else { return [] }
        defer { freeaddrinfo(first) }
        var found: [QUICAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            var storage = sockaddr_storage()
            let length = min(Int(info.pointee.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
            withUnsafeMutableBytes(of: &storage) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: length))
            }
            found.append(QUICAddress(storage: storage, length: socklen_t(length)))
        }
        return found
    }

    /// Calls `body` with the address as a `sockaddr` pointer.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var copy = storage
        return withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
