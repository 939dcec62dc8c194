import Foundation
import Testing
import TestSupport
@testable import MeshMedia

/// Received files keep their metadata (sender, name, MIME type, size) sealed beside the content, and
/// `job mesh files list|export|delete` show, export and delete them; a delivery raises a notification.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ReceivedFilesTests {
    /// a sends `name` with `content` to c (an older client, so the signed legacy form, with consent) and c takes it in.
    func delivered(name: String, content: [UInt8], notify: String? = nil) throws -> MeshLab {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("c", emulate: "older-client")
        try lab.announceAll(["a", "c"], links: MeshLab.bidirectional([("a", "c")]))
        try lab.job("a", ["mesh", "send-file", "--to", lab.id("c"), "--mime", "text/plain", lab.file(name, content), "--accept-unencrypted"])
        #expect(try lab.pass("a", "media-outbox")["transmitted_legacy"] == 1)
        try lab.exchange("a", "c")
        var environment = JobProcess.environment(home: lab.directory.path)
        if let notify { environment["JOB_NOTIFY_COMMAND"] = notify }
        let result = try JobProcess.run(["--store", lab.store("c"), "--now", lab.nowArgument, "--json", "media-inbox"], environment: environment)
        #expect(result.exitCode == 0)
        return lab
    }

    func files(_ lab: MeshLab, _ node: String) throws -> [[String: Any]] {
        try JSONSerialization.jsonObject(with: Data(try lab.job(node, ["mesh", "files", "list"], json: true).stdout.utf8)) as! [[String: Any]]
    }

    @Test func aReceivedFileIsListedWithItsNameMimeTypeSizeAndSenderWhichAreSealedInTheStore() throws {
        let name = "canary-\(UUID().uuidString).txt"
        let content = Array("the quarterly report, in full".utf8)
        let lab = try delivered(name: name, content: content)
        let listed = try files(lab, "c")
        #expect(listed.count == 1)
        let file = try #require(listed.first)
        #expect(file["name"] as? String == name)
        #expect(file["mime"] as? String == "text/plain")
        #expect(file["bytes"] as? Int == content.count)
        #expect(file["declared_size"] as? Int == content.count)
        #expect(file["sender"] as? String == lab.id("a"))
        #expect(file["form"] as? String == "legacy")
        #expect(file["new"] as? Bool == true)
        let text = try lab.job("c", ["mesh", "files", "list"]).stdout
        #expect(text.contains(name) && text.contains("new"))
        // Kept sealed: the name is in none of the receiver's store files.
        #expect(StoreFiles.holding(Array(name.utf8), in: lab.store("c")) == [])
    }

    @Test func exportWritesTheContentToANewFileAndMarksTheFileSeenButNeverOverwrites() throws {
        let content = Array("exported bytes".utf8)
        let lab = try delivered(name: "e.txt", content: content)
        let id = try #require(try files(lab, "c").first?["id"] as? String)
        let target = lab.directory.file("out.txt")
        try lab.job("c", ["mesh", "files", "export", String(id.prefix(10)), "--to", target])
        #expect(FileManager.default.contents(atPath: target).map { [UInt8]($0) } == content)
        #expect(try files(lab, "c").first?["new"] as? Bool == false)

        // An existing target is refused and left as it was.
        let existing = lab.file("existing.txt", Array("keep me".utf8))
        let refused = try lab.job("c", ["mesh", "files", "export", id, "--to", existing], exit: 65)
        #expect(refused.stderr.contains("already exists"))
        #expect(FileManager.default.contents(atPath: existing).map { [UInt8]($0) } == Array("keep me".utf8))
        // Unknown and too-short ids.
        try lab.job("c", ["mesh", "files", "export", "00000000", "--to", lab.directory.file("none.txt")], exit: 65)
        try lab.job("c", ["mesh", "files", "export", "abc", "--to", lab.directory.file("none.txt")], exit: 64)
        #expect(!FileManager.default.fileExists(atPath: lab.directory.file("none.txt")))
    }

    @Test func deleteRemovesTheContentAndTheRecordAndPanicWipeErasesTheMetadata() throws {
        let lab = try delivered(name: "d.txt", content: Array("delete me".utf8))
        let id = try #require(try files(lab, "c").first?["id"] as? String)
        try lab.job("c", ["mesh", "files", "delete", id])
        #expect(try files(lab, "c").isEmpty)
        #expect(lab.delivered("c").isEmpty)
        try lab.job("c", ["mesh", "files", "delete", id], exit: 65)

        let name = "wipe-\(UUID().uuidString).txt"
        let again = try delivered(name: name, content: Array("wipe me".utf8))
        #expect(try files(again, "c").count == 1)
        try again.job("c", ["mesh", "panic-wipe"])
        #expect((try again.database("c").scalar("SELECT count(*) FROM mesh_deliveries") as Int?) == 0)
    }

    @Test func aReceivedFileRunsTheNotifyCommandWithItsKindAndCount() throws {
        let folder = TemporaryDirectory("notify")
        let marker = folder.file("marker")
        let lab = try delivered(name: "n.txt", content: Array("notify me".utf8),
                                notify: "printf '%s %s' \"$JOB_NOTIFY_KIND\" \"$JOB_NOTIFY_COUNT\" > '\(marker)'")
        #expect(try files(lab, "c").count == 1)
        #expect(FileManager.default.contents(atPath: marker).map { String(decoding: $0, as: UTF8.self) } == "received-file 1")
    }
}
