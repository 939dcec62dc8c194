import Foundation
import Testing
import TestSupport

/// SIGTERM during `prefetch`'s request to an Endorser that never answers: the transfer is aborted within about a
/// second and the pass reports the stop (75), through the built `job`.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PrefetchStopTests {
    /// A loopback TCP server that accepts connections and never answers; `accepted` counts them.
    final class SilentServer: @unchecked Sendable {
        let port: UInt16
        private let listener: Int32
        private let lock = NSLock()
        private var connections: [Int32] = []

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            listener = fd
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            guard bound == 0, listen(fd, 16) == 0 else { throw TestFailure("cannot listen on loopback") }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            port = UInt16(bigEndian: address.sin_port)
            Thread.detachNewThread { [self] in
                while true {
                    let connection = accept(fd, nil, nil)
                    guard connection >= 0 else { return }
                    lock.withLock { connections.append(connection) }
                }
            }
        }

        var accepted: Int { lock.withLock { connections.count } }

        func stop() {
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
            lock.withLock { for connection in connections { close(connection) } }
        }
    }

    @Test func sigtermAbortsTheRequestInFlightAndThePassReportsTheStop() throws {
        let server = try SilentServer()
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)"
        let harness = try PrefetchTests.mintedHarness(url)
        let home = TemporaryDirectory("prefetch-stop")
        let env = JobProcess.environment(home: home.path, ["ENDORSER_URL": url])
        let running = try JobProcess.start(["--store", harness.job.storePath, "--now", "2027-09-14T06:30:00Z", "--json", "prefetch"], environment: env)
        let deadline = Date().addingTimeInterval(20)
        while server.accepted == 0, Date() < deadline, running.process.isRunning { usleep(5_000) }
        try #require(server.accepted > 0, "the request reached the server: \(running.stderrSoFar)")
        usleep(200_000)
        let signalled = Date()
        running.signal(SIGTERM)
        let result = try running.wait(timeout: 30)
        let stoppedAfter = Date().timeIntervalSince(signalled)
        #expect(result.exitCode == 75, "\(result.stderr)")
        #expect(stoppedAfter < 3, "stopped \(stoppedAfter) s after SIGTERM, not at the HTTP timeout")
        let object = try result.jsonObject()
        #expect((object["error"] as? [String: Any])?["category"] as? String == "cancelled", "\(object)")
    }
}
