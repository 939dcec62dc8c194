import Glibc

/// Where a link connection comes from, as far as the per-source cap counts: one IPv4 address, or one IPv6 /64
/// (a single host usually holds a whole /64). Never logged.
struct LinkSource: Hashable, Sendable {
    /// 4 bytes for IPv4 (an IPv4-mapped IPv6 address counts as IPv4), the first 8 bytes for IPv6, empty otherwise.
    let prefix: [UInt8]

    /// The source of a peer address returned by `accept`.
    init(_ storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            prefix = withUnsafeBytes(of: &storage) { raw in
                let address = raw.load(as: sockaddr_in.self).sin_addr.s_addr
                return withUnsafeBytes(of: address) { Array($0) }
            }
        case AF_INET6:
            let bytes: [UInt8] = withUnsafeBytes(of: &storage) { raw in
                let address = raw.load(as: sockaddr_in6.self).sin6_addr
                return withUnsafeBytes(of: address) { Array($0) }
            }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            prefix = mapped ? Array(bytes[12..<16]) : Array(bytes[0..<8])
        default:
            prefix = []
        }
    }
}
