/// One complete HTTP request as the server hands it to a handler: method, path, headers and the whole body.
package struct HTTPServerRequest: Sendable {
    /// `GET`, `POST`, … as sent.
    package let method: String
    /// The path, without the query string.
    package let path: String
    /// Header names in lower case; repeated headers are joined with ", ".
    package let headers: [String: String]
    /// The body (never more than the server's `maxBodyBytes`).
    package let body: [UInt8]
    /// The connection's peer address (`192.0.2.1`, `2001:db8::1`; empty when unknown).
    package let peer: String

    package init(method: String, path: String, headers: [String: String], body: [UInt8], peer: String = "") {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    /// A header's value by case-insensitive name.
    package func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A handler's answer: status, headers, body.
package struct HTTPServerResponse: Sendable {
    package var status: Int
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// An `application/json` answer whose body is `json` (already rendered).
    package static func json(_ status: Int, _ json: String, headers: [(name: String, value: String)] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }
}
