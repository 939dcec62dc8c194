import NetAddress
import Runner

/// A peer's `serve-link` address: `HOST:PORT`, `[IPv6]:PORT` (the shared `SocketAddress` rule).
package typealias LinkAddress = SocketAddress

extension SocketAddress {
    /// Parses a peer's `HOST:PORT` (a usage error otherwise; the message does not repeat the address).
    package static func parseLink(_ text: String) throws -> SocketAddress {
        do { return try SocketAddress.parse(text) } catch { throw JobError.usage("an address is HOST:PORT or [IPv6]:PORT with a port from 1 to 65535") }
    }

    /// Parses a `--listen` address, where port 0 (pick a free port) is allowed; the same usage error otherwise.
    static func parseListen(_ text: String) throws -> SocketAddress {
        do { return try SocketAddress.parse(text, allowingPortZero: true) } catch { throw JobError.usage("an address is HOST:PORT or [IPv6]:PORT with a port from 1 to 65535") }
    }
}
