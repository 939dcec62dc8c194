/// One complete HTTP request as the server hands it to a handler: method, path, headers and the whole body.
public struct HTTPServerRequest: Sendable {
    /// `GET`, `POST`, … as sent.
    public let method: String
    /// The path, without the query string.
    public let path: String
    /// Header names in lower case; repeated headers are joined with ", ".
    public let headers: [String: String]
    /// The body (never more than the server's `maxBodyBytes`).
    public let body: [UInt8]
    /// The connection's peer address (`192.0.2.1`, `2001:db8::1`; empty when unknown).
    public let peer: String

    public init(method: String, path: String, headers: [String: String], body: [UInt8], peer: String = "") {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    /// A header's value by case-insensitive name.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A handler's answer: status, headers, body.
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// An `application/json` answer whose body is `json` (already rendered).
    public static func json(_ status: Int, _ json: String, headers: [(name: String, value: String)] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(json.utf8))
    }
}
