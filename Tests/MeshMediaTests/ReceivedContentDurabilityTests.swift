import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import MeshMedia

/// A received file is on disk before the row that lists it commits, a pass killed while writing leaves no copy of the
/// content under a temporary name, and a frame is quarantined only when passes died on it alone twice. Driven
/// through the real `job` binary (under `strace` where the system calls are the point).
@Suite(.serialized, .tags(.process), .timeLimit(.minutes(15))) struct ReceivedContentDurabilityTests {
    static let pair = MeshLab.bidirectional([("a", "b")])

    /// a's legacy file for b, heard by b and not yet processed.
    func heardFile(_ lab: MeshLab, content: [UInt8]) throws {
        let key = try lab.meshNode("a").identity.signing
        let frame = try HandBuilt.legacyFrame(sender: try Hex.decode(lab.id("a")), recipient: try Hex.decode(lab.id("b")),
                                              timestamp: UInt64(lab.clock), payload: HandBuilt.filePacket(content), deflated: nil,
                                              sign: { try key.sign($0) })
        _ = try lab.database("b").execute("INSERT INTO mesh_inbox (frame, received_at) VALUES (?, ?)", [frame, lab.clock])
    }

    @Test func theContentIsWrittenUnnamedFsyncedAndLinkedWithItsFolderFsyncedBeforeTheRowCommits() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        try FileManager.default.createDirectory(atPath: lab.mediaFolder("b"), withIntermediateDirectories: true)
        try heardFile(lab, content: MeshLab.random(300))
        let trace = lab.directory.file("strace.log")
        let run = try JobProcess.start(executable: "/usr/bin/strace",
                                       ["-f", "-qq", "-o", trace, "-e", "trace=openat,open,linkat,rename,renameat,renameat2,fsync,fdatasync,pwrite64,write",
                                        JobProcess.executablePath, "--store", lab.store("b"), "--now", lab.nowArgument, "--json", "media-inbox"],
                                       environment: JobProcess.environment(home: lab.directory.path))
        let result = try run.wait()
        #expect(result.exitCode == 0)
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        let folder = lab.mediaFolder("b")
        // The content is never under a temporary name: an unnamed file in the media folder, linked once written.
        #expect(!lines.contains { $0.contains(".partial") || $0.contains("nosync") })
        let unnamed = try #require(lines.firstIndex { $0.contains("openat(") && $0.contains(folder) && $0.contains("O_TMPFILE") })
        let fd = try #require(lines[unnamed].split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) })
        let fileSync = try #require(lines.indices.first { $0 > unnamed && lines[$0].contains("fsync(\(fd))") })
        let link = try #require(lines.indices.first { $0 > fileSync && lines[$0].contains("linkat(") && lines[$0].contains(folder + "/") })
        let folderOpen = try #require(lines.indices.first { $0 > link && lines[$0].contains("openat(") && lines[$0].contains("\"\(folder)\"") && lines[$0].contains("O_DIRECTORY") })
        let folderFD = try #require(lines[folderOpen].split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) })
        let folderSync = try #require(lines.indices.first { $0 > folderOpen && lines[$0].contains("fsync(\(folderFD))") })
        // The row commits after: the next write to the store's WAL comes after the folder's fsync.
        let wal = try #require(lines.first { $0.contains("openat(") && $0.contains(lab.store("b") + "-wal") })
        let walFD = try #require(wal.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(lines.indices.contains { $0 > folderSync && (lines[$0].contains("pwrite64(\(walFD),") || lines[$0].contains("write(\(walFD),")) })
        #expect(lab.delivered("b").count == 1)
    }

    @Test func temporaryFilesAKilledPassLeftAreRemovedByTheNextPass() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let folder = lab.mediaFolder("b")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // What a pass killed mid-write left: this version's named fallback, and an earlier version's Foundation temporary.
        for name in [".0123abcd.partial", ".0123abcd.dat.nosyncA1b2C3"] {
            #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data("plaintext file content".utf8)))
        }
        let content = MeshLab.random(300)
        try heardFile(lab, content: content)
        let counts = try lab.pass("b", "media-inbox")
        #expect(counts["temporary_files_removed"] == 2)
        #expect(counts["delivered_legacy"] == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(".") } == [])
        #expect(Array(lab.delivered("b").values).map { $0 == content } == [true])
    }

    @Test func aFrameWhosePassWasKilledOnceAloneIsProcessedNotQuarantined() throws {
        let lab = MeshLab()
        try lab.initNode("a"); try lab.initNode("b")
        try lab.announceAll(["a", "b"], links: Self.pair)
        let content = MeshLab.random(300)
        try heardFile(lab, content: content)
        // What a kill during a batch and a second kill right after the restart (with the frame alone) leave.
        let db = try lab.database("b")
        _ = try db.execute("UPDATE mesh_inbox SET attempts = 1 + ?", [InboxQuarantine.aloneMark])
        let counts = try lab.pass("b", "media-inbox")
        #expect(counts["quarantined"] == nil)
        #expect(counts["delivered_legacy"] == 1)
        #expect((try db.scalar("SELECT count(*) FROM mesh_inbox_quarantine") as Int?) == 0)
        #expect(Array(lab.delivered("b").values).map { $0 == content } == [true])
    }
}
