import Foundation
import HTTPClient
import HTTPServer
import Testing

/// Handlers that answer later from another thread (as a store writer does after its commit): the worker is free
/// meanwhile, so more requests wait for their answers than there are workers, and a second answer is ignored.
@Suite(.timeLimit(.minutes(15))) struct DeferredHandlerTests {
    /// Answers parked requests from a thread of its own once `count` of them are waiting.
    final class Parked: @unchecked Sendable {
        // @unchecked: `waiting` is touched only under `lock`.
        private let lock = NSLock()
        private var waiting: [(Int, HTTPServer.Responder)] = []
        func park(_ n: Int, _ respond: @escaping HTTPServer.Responder) { lock.withLock { waiting.append((n, respond)) } }
        var count: Int { lock.withLock { waiting.count } }
        func answerAll() {
            for (n, respond) in lock.withLock({ waiting }) {
                respond(HTTPServerResponse(status: 200, body: Array("answer \(n)".utf8)))
                // A second answer to the same request changes nothing.
                respond(HTTPServerResponse(status: 500, body: Array("again".utf8)))
            }
        }
    }

    @Test func sixteenRequestsWaitForLaterAnswersOnTwoWorkersAndEachGetsItsOwnFirstAnswer() throws {
        let parked = Parked()
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        let server = try HTTPServer(socket: socket, limits: HTTPServerLimits(threads: 2), deferredHandler: { request, respond in
            let n = Int(request.path.dropFirst()) ?? -1
            parked.park(n, respond)
        })
        defer { server.stop() }
        let answers = NSLock()
        nonisolated(unsafe) var bodies: [String] = []
        let threads = (0..<16).map { n in
            Thread {
                let response = try? HTTPClient(options: HTTPClient.Options(totalTimeout: 20)).send(HTTPRequest(url: "http://127.0.0.1:\(socket.port)/\(n)"))
                answers.withLock { bodies.append(response.map { "\($0.status) \($0.bodyText)" } ?? "none") }
            }
        }
        threads.forEach { $0.start() }
        // All sixteen reach the handler although only two workers exist: none holds a worker while it waits.
        let deadline = Date().addingTimeInterval(15)
        while parked.count < 16 && Date() < deadline { usleep(10_000) }
        #expect(parked.count == 16)
        parked.answerAll()
        while answers.withLock({ bodies.count }) < 16 && Date() < deadline { usleep(10_000) }
        #expect(Set(answers.withLock { bodies }) == Set((0..<16).map { "200 answer \($0)" }))
    }
}
