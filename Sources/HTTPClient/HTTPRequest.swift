/// One HTTP request: method, URL, headers (in order) and an optional body.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?

    public init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// Printing a request shows its shape only: the URL, header values and body may carry tokens and
/// identifiers (docs/design.md §5), so they never appear in descriptions, debug output or `dump`.
extension HTTPRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let body = self.body.map { "\($0.count)-byte body" } ?? "no body"
        return "HTTPRequest(\(isHTTPToken(method) ? method : "?"), \(headers.count) headers, \(body))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror { Mirror(self, children: [:], displayStyle: .struct) }
}

private func isHTTPToken(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.count <= 32 && text.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A || $0 == 0x2D }
}
