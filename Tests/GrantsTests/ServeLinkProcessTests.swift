import Foundation
@testable import Grants
import Testing
import TestSupport

/// `serve-link`'s own process life: its stopping options and its socket-activation units.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct ServeLinkProcessTests {
    @Test func maxConnectionsAndIdleExitEndTheListener() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try pair(issuer: alice, holder: bob, label: "alice", address: "127.0.0.1:1")
        // Bob dials only a contact that could deliver offers to him: one holding a grant he issued.
        try pair(issuer: bob, holder: alice, label: "bob", address: "127.0.0.1:1")
        let server = try JobProcess.start(["--store", alice.store, "serve-link", "--listen", "127.0.0.1:0", "--max-connections", "1"],
                                          environment: alice.environment)
        var port: String?
        let deadline = Date().addingTimeInterval(20)
        while port == nil && Date() < deadline {
            port = server.stdoutSoFar.split(separator: "\n").first.flatMap { $0.split(separator: ":").last }.map(String.init)
            usleep(20_000)
        }
        try bob.database().execute("UPDATE contacts SET last_known_addr = ?", ["127.0.0.1:\(try #require(port))"])
        _ = try bob.json(["pull-offers", "--check-now"])
        let result = try server.wait(timeout: 20)
        #expect(result.exitCode == 0)
        #expect(result.stderr.contains("event=link-stopped connections=1"))

        let start = Date()
        let idle = try alice.run(["serve-link", "--listen", "127.0.0.1:0", "--idle-exit", "1"], timeout: 20)
        #expect(idle.exitCode == 0)
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(try alice.run(["serve-link", "--max-connections", "1"]).exitCode == 64, "--max-connections needs --listen")
        #expect(try alice.run(["serve-link", "--listen", "127.0.0.1:0", "--idle-exit", "0"]).exitCode == 64)
    }

    @Test func serveLinkServesTheSocketSystemdPassesAsFileDescriptorThree() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        _ = try alice.identity()
        try alice.set(["link.idle-exit-seconds": "2"])
        let (socketFD, address) = try RawPeer.staller(on: "127.0.0.1")
        try pair(issuer: alice, holder: bob, label: "alice", address: address)
        // As systemd starts it under ListenDatagram=: the socket is fd 3, LISTEN_FDS=1, LISTEN_PID names the process.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "export LISTEN_FDS=1 LISTEN_PID=$$; exec \"$0\" --store \"$1\" serve-link 3<&0 </dev/null",
                             JobProcess.executablePath, alice.store]
        process.environment = alice.environment
        process.standardInput = FileHandle(fileDescriptor: socketFD, closeOnDealloc: true)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() }; process.waitUntilExit() }
        let sent = try bob.json(["offers", "send", "--to", "alice", "--ticket-file", ticketFile(bob, "ticket-fd3"), "--files", "1", "--bytes", "1"])
        #expect(sent["state"] as? String == "delivered", "\(sent)")
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        #expect(!process.isRunning, "exited after link.idle-exit-seconds with nothing open")
    }

    @Test func systemdAcceptsTheSocketActivationUnits() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") else { return }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let work = TemporaryDirectory("units")
        for name in ["serve-link.socket", "serve-link.service"] {
            let text = try String(contentsOf: repository.appendingPathComponent("jobs/" + name), encoding: .utf8)
            if name == "serve-link.socket" {
                #expect(text.contains("ListenDatagram=47100") && text.contains("Accept=no") && !text.contains("ListenStream"))
            }
            if name.hasSuffix(".service") { #expect(!text.contains("StandardInput=socket") && text.contains("ExecStart=/usr/local/bin/job serve-link\n")) }
            try text.replacingOccurrences(of: "/usr/local/bin/job", with: JobProcess.executablePath).write(toFile: work.file(name), atomically: true, encoding: .utf8)
        }
        let text = try ExternalTool.run("/usr/bin/systemd-analyze", ["verify", "--man=no", work.file("serve-link.socket"), work.file("serve-link.service")],
                                        separateStderr: true).stderr
        let problems = text.split(separator: "\n").filter { $0.contains("serve-link") && !$0.contains("Failed to") }
        #expect(problems.isEmpty, "\(problems)")
    }
}
