/// One HTTP request: method, URL, headers (in order) and an optional body.
package struct HTTPRequest: Sendable {
    package var method: String
    package var url: String
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]?

    package init(method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// Printing a request shows its shape only: the URL, header values and body may carry tokens and
/// identifiers (docs/design.md §5), so they never appear in descriptions, debug output or `dump`.
extension HTTPRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String {
        let body = self.body.map { "\($0.count)-byte body" } ?? "no body"
        return "HTTPRequest(\(isHTTPToken(method) ? method : "?"), \(headers.count) headers, \(body))"
    }

    package var debugDescription: String { description }

    package var customMirror: Mirror { Mirror(self, children: [:], displayStyle: .struct) }
}

private func isHTTPToken(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.count <= 32 && text.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A || $0 == 0x2D }
}
