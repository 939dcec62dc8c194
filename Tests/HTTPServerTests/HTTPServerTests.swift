import Foundation
import HTTPClient
import HTTPServer
import Testing

/// The libmicrohttpd server on its own: what a handler sees and sends, concurrency, body caps for announced and
/// chunked bodies, and stopping.
@Suite(.timeLimit(.minutes(15))) struct HTTPServerTests {
    /// A server on 127.0.0.1 with an ephemeral port.
    func start(_ limits: HTTPServerLimits = HTTPServerLimits(), handler: @escaping HTTPServer.Handler) throws -> (HTTPServer, Int) {
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        return (try HTTPServer(socket: socket, limits: limits, handler: handler), socket.port)
    }

    let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 5, totalTimeout: 15, httpVersion: .http1_1))

    @Test func theHandlerSeesMethodPathHeadersAndBodyAndItsAnswerIsSent() throws {
        let (server, port) = try start { request in
            let summary = "\(request.method) \(request.path) \(request.header("X-Probe") ?? "-") \(request.body.count)"
            return HTTPServerResponse(status: 201, headers: [("X-Answer", "yes")], body: Array(summary.utf8))
        }
        defer { server.stop() }
        let response = try client.send(HTTPRequest(method: "PUT", url: "http://127.0.0.1:\(port)/a/b?query=dropped", headers: [("X-Probe", "p1")],
                                                   body: Array(repeating: 7, count: 1000)))
        #expect(response.status == 201 && response.header("X-Answer") == "yes")
        #expect(response.bodyText == "PUT /a/b p1 1000")
    }

    @Test func requestsHeldByTheHandlerAreAnsweredConcurrentlyOnThePoolThreads() throws {
        let (server, port) = try start(HTTPServerLimits(threads: 4)) { _ in
            sleep(1)
            return HTTPServerResponse(status: 200)
        }
        defer { server.stop() }
        let started = Date()
        let statuses = LockedArray()
        let threads = (0..<8).map { _ in
            Thread { statuses.append((try? HTTPClient(options: HTTPClient.Options(totalTimeout: 20)).send(HTTPRequest(url: "http://127.0.0.1:\(port)/")))?.status ?? 0) }
        }
        threads.forEach { $0.start() }
        while statuses.count < 8 && Date().timeIntervalSince(started) < 30 { usleep(10_000) }
        #expect(statuses.values == Array(repeating: 200, count: 8))
        #expect(Date().timeIntervalSince(started) < 6, "eight requests of 1 s each on four threads are not answered one after the other")
    }

    @Test func bodiesOverTheCapGet413WhetherAnnouncedOrChunked() throws {
        let (server, port) = try start(HTTPServerLimits(maxBodyBytes: 1024)) { request in HTTPServerResponse(status: 200, body: Array("\(request.body.count)".utf8)) }
        defer { server.stop() }
        #expect(try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/", body: Array(repeating: 1, count: 1024))).bodyText == "1024")
        #expect(try client.send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(port)/", body: Array(repeating: 1, count: 1025))).status == 413)
        // Chunked, no Content-Length: counted as it arrives.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var request = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        for _ in 0..<3 { request += "200\r\n" + String(repeating: "z", count: 512) + "\r\n" }
        request += "0\r\n\r\n"
        let bytes = Array(request.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 512)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let n = recv(fd, &buffer, buffer.count, 0)
        #expect(n > 0 && String(decoding: buffer[0..<max(0, n)], as: UTF8.self).hasPrefix("HTTP/1.1 413"))
    }

    /// What nginx refuses is refused on the direct port too, with 400 at once (not after the idle timeout): HTTP/1.1
    /// without Host, two Content-Length headers, a Transfer-Encoding other than exactly chunked. HTTP/1.0 without
    /// Host and a plain chunked body are served.
    @Test func malformedFramingIsRefusedWith400AtOnce() throws {
        let (server, port) = try start(HTTPServerLimits(idleTimeoutSeconds: 15)) { request in HTTPServerResponse(status: 200, body: Array("\(request.body.count)".utf8)) }
        defer { server.stop() }
        func exchange(_ text: String) -> (status: String, seconds: Double) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            let started = Date()
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var buffer = [UInt8](repeating: 0, count: 512)
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let n = recv(fd, &buffer, buffer.count, 0)
            return (String(String(decoding: buffer[0..<max(0, n)], as: UTF8.self).prefix(12)), Date().timeIntervalSince(started))
        }
        let refused = [
            "GET / HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        ]
        for text in refused {
            let answer = exchange(text)
            #expect(answer.status == "HTTP/1.1 400" && answer.seconds < 5, "\(text.prefix(40)): \(answer)")
        }
        #expect(exchange("GET / HTTP/1.0\r\n\r\n").status.hasSuffix(" 200"))
        #expect(exchange("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n").status == "HTTP/1.1 200")
    }

    @Test func stopClosesTheListeningSocket() throws {
        let (server, port) = try start { _ in HTTPServerResponse(status: 204) }
        #expect(try client.send(HTTPRequest(url: "http://127.0.0.1:\(port)/")).status == 204)
        server.stop()
        #expect(throws: HTTPError.self) { try client.send(HTTPRequest(url: "http://127.0.0.1:\(port)/")) }
    }

    @Test func stoppingAnswersTheRequestAWorkerHoldsBeforeClosing() throws {
        let entered = LockedArray()
        let (server, port) = try start { _ in
            entered.append(1)
            usleep(800_000)
            return HTTPServerResponse(status: 200, body: Array("done".utf8))
        }
        let answers = LockedArray()
        let thread = Thread { [client] in
            answers.append((try? client.send(HTTPRequest(url: "http://127.0.0.1:\(port)/")))?.status ?? 0)
        }
        thread.start()
        let entryDeadline = Date().addingTimeInterval(10)
        while entered.count == 0 && Date() < entryDeadline { usleep(5_000) }
        try #require(entered.count == 1, "the request reached the handler")
        server.stop()
        let deadline = Date().addingTimeInterval(10)
        while answers.count == 0 && Date() < deadline { usleep(10_000) }
        #expect(answers.values == [200], "the request in the handler was answered, not cut, by stop()")
    }

    /// A request sent from a thread of its own: its status (0 for none) and when it came, once it came.
    final class Sent: Sendable {
        private let answer = LockedArray()
        private let finished = DispatchSemaphore(value: 0)
        init(port: Int) {
            Thread { [answer, finished] in
                answer.append((try? HTTPClient(options: HTTPClient.Options(totalTimeout: 30)).send(HTTPRequest(url: "http://127.0.0.1:\(port)/")))?.status ?? 0)
                finished.signal()
            }.start()
        }
        /// The status, or nil when none came within `seconds`.
        func status(within seconds: Double) -> Int? { finished.wait(timeout: .now() + seconds) == .success ? answer.values.first : nil }
    }

    @Test func droppingTheServerWhileItsHandlerHoldsARequestStillAnswersIt() throws {
        let entered = DispatchSemaphore(value: 0)
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        let port = socket.port
        var server: HTTPServer? = try HTTPServer(socket: socket, limits: HTTPServerLimits()) { _ in
            entered.signal()
            usleep(500_000)
            return HTTPServerResponse(status: 200)
        }
        let sent = Sent(port: port)
        try #require(entered.wait(timeout: .now() + 10) == .success, "the request reached the handler")
        #expect(server != nil)
        server = nil
        #expect(sent.status(within: 10) == 200, "dropping the server drained it: the held request was answered")
        #expect(throws: HTTPError.self) { try client.send(HTTPRequest(url: "http://127.0.0.1:\(port)/")) }
    }

    @Test func aServerDroppedWhileAHandlerBlocksPastTheDrainAnswers503AtOnceAndTheLateAnswerIsHarmless() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        let port = socket.port
        var server: HTTPServer? = try HTTPServer(socket: socket, limits: HTTPServerLimits(threads: 2, drainTimeoutSeconds: 0.3)) { _ in
            entered.signal()
            _ = release.wait(timeout: .now() + 30)
            defer { returned.signal() }
            return HTTPServerResponse(status: 200)
        }
        let sent = Sent(port: port)
        try #require(entered.wait(timeout: .now() + 10) == .success, "the request reached the handler")
        #expect(server != nil)
        let dropped = Date()
        server = nil
        #expect(sent.status(within: 5) == 503, "the held request was answered 503 when the drain timed out, not left to the handler")
        #expect(Date().timeIntervalSince(dropped) < 5)
        #expect(throws: HTTPError.self) { try client.send(HTTPRequest(url: "http://127.0.0.1:\(port)/")) }
        // The handler answers after the daemon was stopped and freed: nothing is resumed, nothing crashes.
        release.signal()
        #expect(returned.wait(timeout: .now() + 10) == .success)
        usleep(200_000)
    }

    @Test func aStoppedServerWhoseDeferredHandlerNeverAnsweredGave503AndALaterAnswerIsHarmless() throws {
        let parked = DeferredHandlerTests.Parked()
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        let server = try HTTPServer(socket: socket, limits: HTTPServerLimits(threads: 2, drainTimeoutSeconds: 0.3), deferredHandler: { _, respond in
            parked.park(0, respond)
        })
        let sent = Sent(port: socket.port)
        let deadline = Date().addingTimeInterval(10)
        while parked.count == 0 && Date() < deadline { usleep(5_000) }
        try #require(parked.count == 1, "the request reached the handler")
        let stopping = Date()
        server.stop()
        #expect(Date().timeIntervalSince(stopping) < 5, "stop returned although the handler never answered")
        #expect(sent.status(within: 5) == 503)
        parked.answerAll()
        usleep(200_000)
    }

    @Test func aBoundPortCannotBeBoundTwiceAndBadAddressesAreRefused() throws {
        let first = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        defer { close(first.descriptor) }
        #expect(throws: ListeningSocket.Failure.self) { try ListeningSocket.bind(host: "127.0.0.1", port: first.port) }
        #expect(throws: ListeningSocket.Failure.self) { try ListeningSocket.bind(host: "localhost", port: 0) }
        // Socket activation: nothing passed unless LISTEN_PID is this process.
        #expect(try ListeningSocket.fromSystemd(environment: ["LISTEN_FDS": "1", "LISTEN_PID": "1"]) == nil)
        #expect(try ListeningSocket.fromSystemd(environment: [:]) == nil)
    }
}

/// Statuses collected from several threads.
// @unchecked: `storage` is read and written only while `lock` is held.
final class LockedArray: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int] = []
    func append(_ value: Int) { lock.withLock { storage.append(value) } }
    var count: Int { lock.withLock { storage.count } }
    var values: [Int] { lock.withLock { storage } }
}
