import Foundation
import Testing
import TestSupport
@testable import HTTPClient

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ErrorTests {
    @Test func aRefusedConnectionFailsWithConnect() throws {
        let refusing = try RefusingPort()
        let error = sendError(HTTPClient(options: .init(connectTimeout: 2)), HTTPRequest(url: "http://127.0.0.1:\(refusing.port)/"))
        #expect(error == .transport(kind: .connect, curlCode: 7))
    }

    @Test func aConnectTimeoutCoversAStalledTLSHandshake() throws {
        let listener = try SilentListener()
        let client = HTTPClient(options: .init(connectTimeout: 1, totalTimeout: 10))
        let started = Date()
        let error = sendError(client, HTTPRequest(url: "https://127.0.0.1:\(listener.port)/"))
        let elapsed = Date().timeIntervalSince(started)
        #expect(error == .transport(kind: .timeout, curlCode: 28))
        #expect(elapsed >= 0.9 && elapsed < 4)  // the 1 s connect timeout, not the 10 s total one
    }

    @Test func requestsAndResponsesPrintOnlyTheirShape() {
        let request = HTTPRequest(method: "POST", url: "https://relay.example/api?token=s3cr3t-query-token",
                                  headers: [("Authorization", "Bearer canary-jwt")], body: Array("canary-body".utf8))
        let response = HTTPResponse(status: 410, headers: [("apns-id", "canary-id")], body: Array("canary-body".utf8), httpVersion: .http2)
        var dumped = ""
        dump(request, to: &dumped)
        dump(response, to: &dumped)
        for rendered in ["\(request)", String(reflecting: request), "\(response)", String(reflecting: response), dumped] {
            for canary in ["s3cr3t", "relay.example", "canary-jwt", "canary-body", "canary-id", "token"] {
                #expect(!rendered.contains(canary), "\(rendered)")
            }
        }
        #expect("\(request)" == "HTTPRequest(POST, 1 headers, 11-byte body)")
        #expect("\(response)" == "HTTPResponse(410, HTTP/2, 1 headers, 11-byte body)")
    }

    @Test func anUnresolvableHostFailsWithDNS() {
        let error = sendError(HTTPClient(options: .init(connectTimeout: 5)), HTTPRequest(url: "http://no-such-host.invalid/"))
        #expect(error == .transport(kind: .dns, curlCode: 6))
    }

    @Test func malformedRequestsAreRefusedBeforeSending() {
        let client = HTTPClient()
        #expect(sendError(client, HTTPRequest(url: "ftp://127.0.0.1/file")) == .invalidRequest(.unsupportedScheme))
        #expect(sendError(client, HTTPRequest(url: "file:///etc/passwd")) == .invalidRequest(.unsupportedScheme))
        #expect(sendError(client, HTTPRequest(url: "http://127.0.0.1/a b")) == .invalidRequest(.malformedURL))
        #expect(sendError(client, HTTPRequest(url: "http://[::1/")) == .invalidRequest(.malformedURL))
        #expect(sendError(client, HTTPRequest(method: "GE T", url: "http://127.0.0.1/")) == .invalidRequest(.invalidMethod))
        #expect(sendError(client, HTTPRequest(url: "http://127.0.0.1/", headers: [("X-A", "1\r\nX-B: 2")])) == .invalidRequest(.invalidHeader))
        #expect(sendError(client, HTTPRequest(url: "http://127.0.0.1/", headers: [("Bad Name", "1")])) == .invalidRequest(.invalidHeader))
    }

    @Test func errorDescriptionsCarryNoURLQueryHeaderOrBody() throws {
        let canaries = ["canary-host-part", "s3cr3t-query-token", "canary-path", "Bearer canary-jwt", "canary-jwt", "canary-body", "token="]
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let refusing = try RefusingPort()
        let headers = [("Authorization", "Bearer canary-jwt"), ("X-API-Key", "canary-jwt")]
        let body = Array("{\"device_id\":\"canary-body\"}".utf8)
        let client = HTTPClient(options: .init(connectTimeout: 2, totalTimeout: 2, maxResponseBodyBytes: 10))
        var errors: [HTTPError] = []
        for request in [
            HTTPRequest(method: "POST", url: "http://127.0.0.1:\(refusing.port)/canary-path?token=s3cr3t-query-token", headers: headers, body: body),
            HTTPRequest(method: "POST", url: peer.url(path: "/canary-path?delay=6&token=s3cr3t-query-token"), headers: headers, body: body),
            HTTPRequest(method: "POST", url: peer.url(path: "/canary-path?body_size=100&token=s3cr3t-query-token"), headers: headers, body: body),
            HTTPRequest(url: "http://canary-host-part.invalid/canary-path?token=s3cr3t-query-token", headers: headers),
            HTTPRequest(url: "gopher://canary-host-part/canary-path?token=s3cr3t-query-token"),
            HTTPRequest(url: "http://127.0.0.1/canary-path?token=s3cr3t-query-token", headers: [("X-Bad", "canary-jwt\n")]),
        ] {
            errors.append(try #require(sendError(client, request)))
        }
        #expect(errors.map(\.transportKind) == [.connect, .timeout, nil, .dns, nil, nil])
        for error in errors {
            for rendered in ["\(error)", String(reflecting: error), error.localizedDescription] {
                for canary in canaries {
                    #expect(!rendered.contains(canary), "\(rendered)")
                }
            }
        }
        #expect("\(errors[0])".contains("connect"))
    }
}
