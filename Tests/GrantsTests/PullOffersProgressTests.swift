import Foundation
import Testing
import TestSupport

/// `pull-offers` on a terminal shows the contacts done of those due, reported from the coordinating thread.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct PullOffersProgressTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) from bsdutils for a pseudo-terminal"))
    func pullOffersShowsContactsDoneOfThoseDueOnATerminal() throws {
        let bob = LinkTestNode()
        for label in ["c1", "c2", "c3"] {
            let issuer = LinkTestNode()
            // Nobody listens there: each contact is dialled and counted unreachable.
            try pair(issuer: issuer, holder: bob, label: label, address: "127.0.0.1:1")
            try bob.ok(["grants", "issue", "--to", issuer.endpointHex])
        }
        var environment = bob.environment
        environment["JOB_PROGRESS_DELAY_MS"] = "0"
        let command = "'\(JobProcess.executablePath)' --store '\(bob.store)' pull-offers --check-now"
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: environment)
        #expect(session.status == 0, "\(session.output)")
        #expect(session.output.contains("unreachable=3"), "\(session.output)")
        #expect(session.output.contains("3 / 3 rows, "), "\(session.output)")
    }
}
