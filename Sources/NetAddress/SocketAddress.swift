/// A socket address in its text form, `HOST:PORT` or `[IPv6]:PORT`: the one rule every command that takes or
/// shows an address uses (`serve-link`, `grants accept --addr`, `serve-relay --listen`, a Syncthing GUI address).
///
/// `host` is kept without brackets: a name, an IPv4 literal or an IPv6 literal. Parsing checks the shape only;
/// whether the host resolves, or is an address of this machine, is for the caller that dials or binds.
package struct SocketAddress: Sendable, Hashable {
    package let host: String
    package let port: UInt16

    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, with the host in brackets when it is an IPv6 literal (it holds a colon).
    package var text: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The text is not `HOST:PORT` or `[IPv6]:PORT` with an allowed port. The callers map it to their own message.
    package struct Malformed: Error, Equatable {
        package init() {}
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`. The host is not empty, at most 253 characters, without whitespace or
    /// `/`, and holds a colon only inside brackets; the port is ASCII digits from 1 to 65535, or 0 as well when
    /// `allowingPortZero` (a bind that lets the kernel pick a free port).
    package static func parse(_ text: String, allowingPortZero: Bool = false) throws(Malformed) -> SocketAddress {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw Malformed() }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw Malformed() }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw Malformed() }
        }
        guard !host.isEmpty, host.count <= 253, !host.contains(where: { $0.isWhitespace || $0 == "/" }),
              !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText), port > 0 || allowingPortZero else { throw Malformed() }
        return SocketAddress(host: String(host), port: port)
    }
}
