import Foundation
import Testing
import TestSupport
@testable import HTTPClient

@Suite(.tags(.process), .timeLimit(.minutes(15))) struct HTTP1Tests {
    @Test func aGetReturnsStatusHeadersAndBodyOverHTTP1_1() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let client = HTTPClient()
        let response = try client.send(HTTPRequest(url: peer.url(path: "/items?status=203&header=X-Multi:one&header=x-multi:two&body=hello")))
        #expect(response.status == 203)
        #expect(response.bodyText == "hello")
        #expect(response.httpVersion == .http1_1)
        #expect(response.header("X-MULTI") == "one")
        #expect(response.headers(named: "x-multi") == ["one", "two"])
        #expect(response.header("content-length") == "5")
        #expect(response.header("x-absent") == nil)
        // Ordered as received: the scripted headers come before Content-Length.
        let names = response.headers.map { $0.name.lowercased() }
        let firstMulti = try #require(names.firstIndex(of: "x-multi"))
        let length = try #require(names.firstIndex(of: "content-length"))
        #expect(firstMulti < length)
    }

    @Test func aPostSendsItsBodyAndHeadersAndGetsTheAnswer() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let body = Array("{\"device_id\":\"abc\"}".utf8)
        let response = try HTTPClient().send(HTTPRequest(method: "POST", url: peer.url(path: "/api/v1/trigger?echo=1&status=202"),
                                                         headers: [("Content-Type", "application/json"), ("X-Empty", "")], body: body))
        #expect(response.status == 202)
        let echo = try Echo(response)
        #expect(echo.method == "POST")
        #expect(echo.body == "{\"device_id\":\"abc\"}")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.header("X-Empty") == "")
        #expect(echo.header("Expect") == nil)
    }

    @Test func otherMethodsWithAndWithoutBodyUseTheirMethod() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let client = HTTPClient()
        let put = try Echo(client.send(HTTPRequest(method: "PUT", url: peer.url(path: "/r?echo=1"), body: [1, 2, 3].map { $0 + 0x40 })))
        #expect(put.method == "PUT")
        #expect(put.body == "ABC")
        #expect(put.header("Content-Type") == nil)  // libcurl's form-urlencoded default is dropped
        let delete = try Echo(client.send(HTTPRequest(method: "DELETE", url: peer.url(path: "/r?echo=1"))))
        #expect(delete.method == "DELETE")
        let head = try client.send(HTTPRequest(method: "HEAD", url: peer.url(path: "/r?body_size=10")))
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
    }

    @Test func aTotalTimeoutAgainstADelayingServerFailsWithTimeout() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let client = HTTPClient(options: .init(connectTimeout: 1, totalTimeout: 1))
        let started = Date()
        let error = sendError(client, HTTPRequest(url: peer.url(path: "/slow?delay=5")))
        let elapsed = Date().timeIntervalSince(started)
        #expect(error?.transportKind == .timeout)
        #expect(error == .transport(kind: .timeout, curlCode: 28))
        #expect(elapsed >= 0.9 && elapsed < 3)
    }

    @Test func aBodyOverTheCapFailsWithBodyTooLarge() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let client = HTTPClient(options: .init(maxResponseBodyBytes: 1000))
        #expect(sendError(client, HTTPRequest(url: peer.url(path: "/big?body_size=1001"))) == .bodyTooLarge(limit: 1000))
        let atCap = try client.send(HTTPRequest(url: peer.url(path: "/exact?body_size=1000")))
        #expect(atCap.body.count == 1000)
    }

    @Test func aBodyWithoutContentLengthIsAbortedOnceItPassesTheCap() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let client = HTTPClient(options: .init(maxResponseBodyBytes: 50_000))
        let error = sendError(client, HTTPRequest(url: peer.url(path: "/stream?close_delimited=1&body_size=200000")))
        #expect(error == .bodyTooLarge(limit: 50_000))
        let small = try client.send(HTTPRequest(url: peer.url(path: "/stream?close_delimited=1&body_size=49999")))
        #expect(small.body.count == 49_999)
        #expect(small.header("content-length") == nil)
    }

    @Test func a429CarriesRetryAfterInDeltaSeconds() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let response = try HTTPClient().send(HTTPRequest(method: "POST", url: peer.url(path: "/api/v1/trigger?status=429&header=Retry-After:120"), body: []))
        #expect(response.status == 429)
        let value = try #require(response.header("retry-after"))
        #expect(RetryAfter.parse(value, now: Date()) == 120)
    }

    @Test func a429CarriesRetryAfterAsAnHTTPDate() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let now = Date(timeIntervalSince1970: floor(Date().timeIntervalSince1970))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = formatter.string(from: now.addingTimeInterval(90))
        let query = "status=429&header=" + "Retry-After:\(date)".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let response = try HTTPClient().send(HTTPRequest(url: peer.url(path: "/limited?\(query)")))
        #expect(response.status == 429)
        #expect(response.header("Retry-After") == date)
        #expect(RetryAfter.parse(try #require(response.header("Retry-After")), now: now) == 90)
    }

    @Test func redirectsAreReturnedUnlessFollowingIsOn() throws {
        let routes = FileManager.default.temporaryDirectory.appendingPathComponent("routes-\(UUID().uuidString).json")
        try Data("""
            {"/old": {"status": 302, "headers": [["Location", "/new"]]},
             "/new": {"body": "arrived"},
             "/loop": {"status": 307, "headers": [["Location", "/loop"]]}}
            """.utf8).write(to: routes)
        defer { try? FileManager.default.removeItem(at: routes) }
        let peer = try PythonPeer.start("http1_server.py", arguments: ["--routes", routes.path])
        defer { peer.stop() }

        let notFollowing = try HTTPClient().send(HTTPRequest(url: peer.url(path: "/old")))
        #expect(notFollowing.status == 302)
        #expect(notFollowing.header("location") == "/new")

        let following = HTTPClient(options: .init(followRedirects: true, maxRedirects: 3))
        let arrived = try following.send(HTTPRequest(url: peer.url(path: "/old")))
        #expect(arrived.status == 200)
        #expect(arrived.bodyText == "arrived")
        #expect(arrived.header("location") == nil)  // only the final response's headers
        #expect(sendError(following, HTTPRequest(url: peer.url(path: "/loop")))?.transportKind == .tooManyRedirects)
    }

    @Test func aBatchOverHTTP1_1ReturnsEveryResultInOrder() throws {
        let peer = try PythonPeer.start("http1_server.py")
        defer { peer.stop() }
        let requests = (0..<20).map { HTTPRequest(url: peer.url(path: "/n?body=\($0)")) }
        let outcome = HTTPClient().batchWithStatistics(requests, maxConcurrentStreams: 5)
        #expect(outcome.results.count == 20)
        for (index, result) in outcome.results.enumerated() {
            #expect((try? result.get().bodyText) == "\(index)")
        }
        #expect(outcome.connectionsOpened == 1)  // one keep-alive connection, requests in turn
    }
}
