/// The HTTP version a response arrived over.
package enum HTTPProtocolVersion: String, Sendable, Equatable, CustomStringConvertible {
    case http1_0 = "HTTP/1.0"
    case http1_1 = "HTTP/1.1"
    case http2 = "HTTP/2"
    case http3 = "HTTP/3"
    case unknown = "unknown"

    package var description: String { rawValue }
}

/// A complete response: any status (statuses are not errors), headers in arrival order, the body.
package struct HTTPResponse: Sendable {
    package var status: Int
    /// Header fields of the final response, in the order received. With redirects followed,
    /// or after a `100 Continue`, only the last response's fields are kept.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]
    package var httpVersion: HTTPProtocolVersion

    package init(status: Int, headers: [(name: String, value: String)], body: [UInt8], httpVersion: HTTPProtocolVersion) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The first value of the header field `name`, compared case-insensitively (ASCII).
    package func header(_ name: String) -> String? {
        headers.first { asciiCaseInsensitiveEquals($0.name, name) }?.value
    }

    /// Every value of the header field `name`, in order, compared case-insensitively (ASCII).
    package func headers(named name: String) -> [String] {
        headers.filter { asciiCaseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    /// The body decoded as UTF-8 (invalid sequences replaced).
    package var bodyText: String { String(decoding: body, as: UTF8.self) }
}

func asciiCaseInsensitiveEquals(_ a: String, _ b: String) -> Bool {
    let x = a.utf8, y = b.utf8
    guard x.count == y.count else { return false }
    for (p, q) in zip(x, y) where p != q {
        let lp = (p >= 65 && p <= 90) ? p | 0x20 : p
        let lq = (q >= 65 && q <= 90) ? q | 0x20 : q
        if lp != lq { return false }
    }
    return true
}

/// Printing a response shows its shape only (status, version, counts), never header values or the body.
extension HTTPResponse: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String {
        "HTTPResponse(\(status), \(httpVersion), \(headers.count) headers, \(body.count)-byte body)"
    }

    package var debugDescription: String { description }

    package var customMirror: Mirror { Mirror(self, children: [:], displayStyle: .struct) }
}
