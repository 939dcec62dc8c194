import Foundation
import Testing
import TestSupport
@testable import Relay

/// `send-wakeups` on a terminal shows the answers received of the pushes it sends (never with `--json` or into a pipe).
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct SendWakeupsProgressTests {
    let t0: Int64 = 1_780_000_000

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) from bsdutils for a pseudo-terminal"), arguments: StoreKind.allCases)
    func sendWakeupsShowsAnswersReceivedOfThePushesOnATerminal(_ kind: StoreKind) throws {
        let standIn = try APNsStandIn()
        defer { standIn.stop() }
        var environment = standIn.environment()
        environment["JOB_PROGRESS_DELAY_MS"] = "0"
        let m = try RelayMachine(kind, environment: environment)
        try m.register(Fixture.deviceID(1), Fixture.token(1), at: t0 - 600)  // creates the store and its key; never triggered
        try m.seed(devices: 100, tokensPerDevice: 2, registeredAt: (t0 - 600) * 1000, triggeredAt: (t0 - 1) * 1000,
                   deviceID: { Fixture.deviceID(1000 + $0) }, token: { Fixture.token(1000 + $0 * 2 + $1) })
        let command = "'\(JobProcess.executablePath)' --store '\(m.store)' --now @\(t0) send-wakeups"
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", command, "/dev/null"],
                                           environment: JobProcess.environment(home: m.home.path, m.extra))
        #expect(session.status == 0, "\(session.output)")
        #expect(session.output.contains(" / 200 rows, "), "\(session.output)")
    }
}
