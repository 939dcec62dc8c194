import Foundation
import Testing
import TestSupport

/// A PostgreSQL location may carry a password: it never reaches a command line another local user can read.
@Suite(.tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct StoreLocationSecrecyTests {
    /// The command lines (arguments joined by spaces) of the running children of `parent`.
    func commandLines(ofChildrenOf parent: Int32) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid -> String? in
            // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its closing parenthesis.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")"),
                  stat[stat.index(after: close)...].split(separator: " ").dropFirst().first == Substring(String(parent)) else { return nil }
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty else { return nil }
            return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
        }
    }

    /// serve-relay starts a send-wakeups pass when a trigger makes a push due; the APNs stand-in holds its answer, so
    /// the pass is running while its command line is read. The store reaches it through the environment.
    @Test func thePassServeRelayStartsGetsTheStoreWithoutItOnItsCommandLine() throws {
        let password = "canary-store-password-0a0a"
        let standIn = try APNsStandIn(answerDelayMilliseconds: 3_000)
        defer { standIn.stop() }
        let front = try RelayFront(.postgresql, chain: nil, extra: standIn.environment())
        let store = front.store.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://postgres:\(password)@")
        #expect(store.contains(password))
        let device = Fixture.deviceID(95)
        let registered = try JobProcess.run(["--store", store, "relay", "register", "--device-id", device, "--apns-token", Fixture.token(95)],
                                            environment: front.environment)
        #expect(registered.exitCode == 0, "\(registered.stderr)")
        let server = try JobProcess.start(["--store", store, "serve-relay", "--listen", "127.0.0.1:0"], environment: front.environment)
        defer { server.signal(SIGKILL); _ = try? server.wait(timeout: 10) }
        var port: Int?
        let started = Date().addingTimeInterval(20)
        while port == nil && Date() < started && server.process.isRunning {
            port = server.stdoutSoFar.split(separator: "\n").first { $0.hasPrefix("listening on 127.0.0.1:") }.flatMap { Int($0.split(separator: ":").last ?? "") }
            if port == nil { usleep(20_000) }
        }
        let base = "http://127.0.0.1:\(try #require(port, "serve-relay did not start: \(server.stderrSoFar)"))"
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202)

        // The push reached the stand-in, whose answer is held back: the pass is running now.
        let reached = Date().addingTimeInterval(20)
        while try standIn.received().isEmpty && Date() < reached { usleep(20_000) }
        #expect(try standIn.received().count == 1)
        let passes = commandLines(ofChildrenOf: server.pid)
        #expect(passes.count == 1 && passes.allSatisfy { $0.hasSuffix(" send-wakeups") }, "\(passes)")
        #expect(passes.allSatisfy { !$0.contains(password) && !$0.contains("postgresql://") }, "\(passes)")

        // It finishes with the store it was given, and serve-relay exits cleanly.
        let finished = Date().addingTimeInterval(30)
        while !server.stderrSoFar.contains("relay-api.pass_finished") && Date() < finished { usleep(50_000) }
        #expect(server.stderrSoFar.contains("event=relay-api.pass_finished exit_code=0"), "\(server.stderrSoFar)")
        server.signal(SIGTERM)
        let stopped = try server.wait(timeout: 20)
        #expect(stopped.exitCode == 0 && !(stopped.stdout + stopped.stderr).contains(password))
    }
}
