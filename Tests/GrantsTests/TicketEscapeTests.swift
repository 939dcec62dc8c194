import Foundation
@testable import Grants
import Testing
import TestSupport

/// A contact chooses the ticket text: `offers accept` shows its control characters escaped on a terminal, and
/// keeps the exact text for a pipe and in JSON.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct TicketEscapeTests {
    /// An OSC title change, a bell, a clear-screen CSI and a right-to-left override around ordinary text.
    static let hostileTicket = "iroh-ticket-\u{1B}]0;pwned\u{07}\u{1B}[2J\u{202E}gnp.exe\u{9B}31m-end"

    /// Runs `job --store <node> arguments…` with stdout on a pseudo-terminal; returns the exit code and the bytes
    /// the terminal received.
    func runOnTerminal(_ node: LinkTestNode, _ arguments: [String]) throws -> (exitCode: Int32, output: [UInt8]) {
        // posix_openpt and friends are not visible through Glibc here: the same steps as Linux ioctls
        // (TIOCSPTLCK unlocks the terminal side, TIOCGPTN names it; the generic ioctl encoding of x86-64 and arm64).
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard master >= 0 else { throw TestFailure("no pseudo-terminal") }
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else { throw TestFailure("cannot unlock the terminal") }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw TestFailure("cannot open the terminal side") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: JobProcess.executablePath)
        process.arguments = ["--store", node.store] + arguments
        process.environment = node.environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardError = FileHandle.nullDevice
        try process.run()
        close(slave)
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            var pfd = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 100) == 1 {
                let count = read(master, &buffer, buffer.count)
                if count <= 0 { break }          // EIO: the terminal side was closed by the exited process
                output += buffer[0..<count]
            } else if !process.isRunning {
                break
            }
        }
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test func aContactSuppliedTicketIsEscapedOnATerminalAndExactInAPipeAndInJSON() throws {
        let alice = LinkTestNode(), bob = LinkTestNode()
        try bob.startServer()
        defer { _ = try? bob.stopServer() }
        try pair(issuer: bob, holder: alice, label: "bob")
        var ids: [String] = []
        for _ in 0..<3 {
            let sent = try alice.json(["offers", "send", "--to", "bob", "--ticket-file", ticketFile(alice, Self.hostileTicket), "--files", "1", "--bytes", "1"])
            ids.append(try #require(sent["offer_id"] as? String))
        }

        let terminal = try runOnTerminal(bob, ["offers", "accept", ids[0]])
        #expect(terminal.exitCode == 0)
        let shown = String(decoding: terminal.output, as: UTF8.self)
        for raw: UInt8 in [0x1B, 0x07] { #expect(!terminal.output.contains(raw), "raw control byte \(raw) reached the terminal") }
        #expect(!shown.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x9B })
        #expect(shown.contains(#"iroh-ticket-\u{1B}]0;pwned\u{7}\u{1B}[2J\u{202E}gnp.exe\u{9B}31m-end"#), "\(shown)")

        let piped = try bob.ok(["offers", "accept", ids[1]])
        #expect(piped == Self.hostileTicket + "\n", "a pipe gets the exact ticket for the transfer tool")

        let json = try bob.json(["offers", "accept", ids[2]])
        #expect(json["ticket"] as? String == Self.hostileTicket)
    }
}
