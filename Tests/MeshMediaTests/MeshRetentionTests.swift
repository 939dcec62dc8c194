import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// Received files and the history of finished sends are kept for a set number of days
/// (`mesh.received-files-retention-days`, `mesh.send-history-retention-days`), counted on the invocation's clock
/// (`--now` when given) by `maintain-store` and the media passes, through the real `job`.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct MeshRetentionTests {
    static let day: Int64 = 86_400_000

    /// a sends a file to c (an older client: the signed legacy form, with consent) and c takes it in.
    func delivered() throws -> MeshLab {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("c", emulate: "older-client")
        try lab.announceAll(["a", "c"], links: MeshLab.bidirectional([("a", "c")]))
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), lab.file("kept.txt", Array("kept for a while".utf8)), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        try lab.exchange("a", "c")
        #expect(try lab.pass("c", "media-inbox")["delivered_legacy"] == 1)
        return lab
    }

    func files(_ lab: MeshLab, _ node: String) throws -> [[String: Any]] {
        try JSONSerialization.jsonObject(with: Data(try lab.job(node, ["mesh", "files", "list"], json: true).stdout.utf8)) as! [[String: Any]]
    }

    @Test func receivedFilesAndFinishedSendsGoAfterTheirRetentionCountedOnTheInvocationsClock() throws {
        let lab = try delivered()
        let start = lab.clock
        #expect(try lab.sends("a").count == 1)
        #expect(try files(lab, "c").count == 1 && lab.delivered("c").count == 1)

        // A day on (the emulated clock, months before the real one): nothing has reached its retention yet. Before,
        // nothing was ever pruned; pruned against the real clock, both would be gone already.
        lab.clock = start + Self.day
        try lab.job("a", ["maintain-store"])
        try lab.job("c", ["maintain-store"])
        #expect(try lab.sends("a").count == 1)
        #expect(try files(lab, "c").count == 1)

        // The send history's default 30 days have passed; the received file's 90 have not.
        lab.clock = start + 31 * Self.day
        let sender = try lab.pass("a", "media-outbox")
        #expect(sender["send_history_pruned"] == 1, "\(sender)")
        #expect(try lab.sends("a").isEmpty)
        try lab.job("c", ["maintain-store"])
        #expect(try files(lab, "c").count == 1)

        lab.clock = start + 91 * Self.day
        let maintained = try lab.job("c", ["maintain-store"], json: true).jsonObject()
        #expect((maintained["counts"] as? [String: Int])?["received_files_expired"] == 1, "\(maintained)")
        #expect(try files(lab, "c").isEmpty)
        #expect(lab.delivered("c").isEmpty, "the content left the media folder too")
    }

    @Test func zeroKeepsReceivedFilesAndAShorterSettingPrunesThemSooner() throws {
        let lab = try delivered()
        let start = lab.clock
        try lab.job("c", ["settings", "set", "mesh.received-files-retention-days", "0"])
        lab.clock = start + 400 * Self.day
        try lab.job("c", ["media-inbox"])
        #expect(try files(lab, "c").count == 1, "0 keeps them until deleted by hand")

        try lab.job("c", ["settings", "set", "mesh.received-files-retention-days", "7"])
        lab.clock = start + 6 * Self.day
        try lab.job("c", ["media-inbox"])
        #expect(try files(lab, "c").count == 1)
        lab.clock = start + 8 * Self.day
        #expect(try lab.pass("c", "media-inbox")["received_files_expired"] == 1)
        #expect(try files(lab, "c").isEmpty && lab.delivered("c").isEmpty)
    }

    @Test func aBadStoredRetentionExits78NamingItAndNothingIsPruned() throws {
        let lab = try delivered()
        lab.clock += 400 * Self.day
        for (key, value) in [("mesh.received-files-retention-days", "soon"), ("mesh.send-history-retention-days", "0")] {
            let node = key.contains("received") ? "c" : "a"
            let write = try ExternalTool.run("/usr/bin/sqlite3", [lab.store(node), "INSERT OR REPLACE INTO settings (key, value, updated_at) VALUES ('\(key)', '\(value)', 0)"])
            #expect(write.status == 0, "\(write.output)")
            for pass in ["maintain-store", "media-inbox", "media-outbox"] {
                let result = try lab.job(node, [pass], exit: 78)
                #expect(result.stderr.contains("setting \(key)"), "\(pass): \(result.stderr)")
            }
        }
        #expect(try files(lab, "c").count == 1 && lab.delivered("c").count == 1)
        #expect(try lab.sends("a").count == 1)
        try lab.job("a", ["settings", "set", "mesh.send-history-retention-days", "0"], exit: 64)
    }
}
