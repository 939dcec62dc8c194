import Runner

/// A peer's `serve-link` address: `HOST:PORT`, `[IPv6]:PORT`.
package struct LinkAddress: Sendable, Equatable {
    package let host: String
    package let port: UInt16

    /// `HOST:PORT` as stored and shown.
    package var text: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (a usage error otherwise; the message does not repeat the address).
    package static func parse(_ text: String) throws -> LinkAddress {
        let bad = JobError.usage("an address is HOST:PORT or [IPv6]:PORT with a port from 1 to 65535")
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { throw bad }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw bad }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { throw bad }
        }
        guard !host.isEmpty, host.count <= 253, !host.contains(where: { $0.isWhitespace || $0 == "/" }),
              let port = UInt16(portText), port > 0, portText.allSatisfy(\.isNumber) else { throw bad }
        return LinkAddress(host: String(host), port: port)
    }
}
