import Foundation
import Testing
import TestSupport
@testable import Homeserver

/// `retrigger-stale` on a terminal shows the (peer, folder) completions asked of Syncthing out of those to ask.
@Suite(.serialized, .tags(.process, .postgres, .syncthing), .timeLimit(.minutes(15))) struct RetriggerStaleProgressTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) from bsdutils for a pseudo-terminal"))
    func retriggerStaleShowsFoldersCheckedOfThoseSharedOnATerminal() throws {
        try #require(SyncthingInstance.isInstalled, "Debian's syncthing package is required")
        let home = try RetriggerStaleTests.Homeserver()
        defer { home.syncthing.stop() }
        let relay = try RelayStandIn()
        defer { relay.stop() }
        let m = try HelperMachine(environment: home.environment(relay: relay.url, ["JOB_PROGRESS_DELAY_MS": "0"]))
        let command = "'\(JobProcess.executablePath)' --store '\(m.store)' retrigger-stale"
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", command, "/dev/null"],
                                           environment: JobProcess.environment(home: m.home.path, m.extra))
        #expect(session.status == 0, "\(session.output)")
        #expect(session.output.contains("triggered=1"), "\(session.output)")
        #expect(session.output.contains("1 / 1 rows, "), "\(session.output)")
    }
}
