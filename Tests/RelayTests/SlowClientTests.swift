import Foundation
import Testing
import TestSupport

/// Slowloris on `serve-relay`'s own port (docs/roles/relay.md, "Slow clients on the direct port"): absolute
/// deadlines that trickled bytes never extend, and a cap on connections from one address, with the defaults.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct SlowClientTests {
    @Test func trickledConnectionsAreCutAtTheHeaderDeadlineAndOneAddressGetsAtMost512WhileAnotherClientIsServed() throws {
        let front = try RelayFront(.sqlite, chain: nil)
        let port = try front.startServer(["--no-push"])
        defer { front.stop() }
        // 512 connections from 127.0.0.1, each starting a request whose headers then trickle.
        var trickling: [RawConnection] = []
        for _ in 0..<512 {
            let connection = try RawConnection(port: port)
            connection.send("POST /api/v1/trigger HTTP/1.1\r\nHost: x\r\nX-Pad: ")
            trickling.append(connection)
        }
        let opened = Date()
        usleep(300_000)
        // The 513th from the same address is closed at accept, unanswered.
        let refused = try RawConnection(port: port)
        #expect(refused.isClosed(waiting: 3), "the 513th connection from one address was refused")

        // A genuine client from another address is served at once.
        let genuine = try RawConnection(port: port, from: "127.0.0.2")
        let asked = Date()
        let answer = genuine.exchange("GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 200") && Date().timeIntervalSince(asked) < 2, "\(answer.prefix(40))")

        // A header byte every 2 s on each: the idle timeout (15 s) never fires, the header deadline (10 s) does.
        var open = Array(trickling.indices)
        var lastCut = 0.0
        while !open.isEmpty && Date().timeIntervalSince(opened) < 16 {
            open.removeAll { index in
                let closed = !trickling[index].send("a") || trickling[index].isClosed()
                if closed { lastCut = Date().timeIntervalSince(opened) }
                return closed
            }
            usleep(2_000_000)
        }
        #expect(open.count == 0, "\(open.count) of 512 trickling connections still open after 16 s")
        #expect(lastCut >= 8 && lastCut < 13, "cut at the 10 s header deadline, last at \(lastCut) s")

        // Once they are gone, the address may connect again.
        let again = try RawConnection(port: port)
        #expect(again.exchange("GET /api/v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").hasPrefix("HTTP/1.1 200"))
    }
}
