import Foundation
import Store
import Testing
import TestSupport

/// A damaged or unusable store: a clear message, exit 73, and the file never made worse.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct DamagedStoreTests {
    let home = TemporaryDirectory("damaged")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    /// A migrated store with some ledger rows, checkpointed into the main file.
    func makeStore() throws {
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 5_000)
        let db = try Database(path: store)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    func sha(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    @Test func aTruncatedStoreExits73AndIsNotModified() throws {
        try makeStore()
        let full = try sha(store)
        try full.prefix(full.count / 2).write(to: URL(fileURLWithPath: store))
        let before = try sha(store)
        for command in [["maintain-store"], ["status"], ["settings", "list"]] {
            let result = try JobProcess.run(["--store", store] + command, environment: env)
            #expect(result.exitCode == 73, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("damaged") || result.stderr.contains("not an SQLite database"), "\(command): \(result.stderr)")
        }
        #expect(try sha(store) == before)
    }

    @Test func randomBytesInAPageExit73AndTheFileIsNotModified() throws {
        try makeStore()
        // Scramble a page in the middle of the ledger table, keeping the header page intact. The page is found with
        // dbstat, not guessed from the file's middle: which table sits there depends on every module's schema.
        let leaves: [Int] = try Database(path: store).query("SELECT pageno FROM dbstat WHERE name = 'job_runs' AND pagetype = 'leaf' ORDER BY pageno")
            .map { try $0.get(0) }
        try #require(leaves.count > 2, "the ledger spans several pages")
        var bytes = try sha(store)
        var generator = SystemRandomNumberGenerator()
        let page = 4096 * (leaves[leaves.count / 2] - 1)
        for i in page..<(page + 4096) { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        try bytes.write(to: URL(fileURLWithPath: store))
        let result = try JobProcess.run(["--store", store, "maintain-store"], environment: env)
        #expect(result.exitCode == 73, "\(result.stderr)")
        #expect(result.stderr.contains("damaged"))
        #expect(try sha(store) == bytes)
    }

    /// Runs `script` as root in a private mount namespace (mounts vanish with it); nil when that is not possible here.
    func inMountNamespace(_ script: String) throws -> (status: Int32, output: String)? {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return nil }
        let result = try ExternalTool.run("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", script])
        return (result.status, result.output)
    }

    static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        let probe = try? ExternalTool.run("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"])
        return probe?.status == 0
    }()

    @Test(.enabled(if: DamagedStoreTests.canMount, "needs root and mount namespaces (CI runs as root)"))
    func aFullDiskFailsThePassWith73AndLeavesTheStoreAsItWas() throws {
        try makeStore()
        let job = JobProcess.executablePath
        let mountPoint = home.file("full")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        // Copy the store onto a small tmpfs, fill the rest of the disk, then run a pass that must write.
        let script = """
            set -e
            mount -t tmpfs -o size=2m tmpfs '\(mountPoint)'
            cp '\(store)' '\(mountPoint)/store.sqlite'
            cp '\(store).key' '\(mountPoint)/store.sqlite.key' 2>/dev/null || true
            before=$(sha256sum '\(mountPoint)/store.sqlite' | cut -d' ' -f1)
            dd if=/dev/zero of='\(mountPoint)/filler' bs=4k 2>/dev/null || true
            set +e
            HOME='\(home.path)' '\(job)' --store '\(mountPoint)/store.sqlite' maintain-store
            echo "exit=$?"
            after=$(sha256sum '\(mountPoint)/store.sqlite' | cut -d' ' -f1)
            [ "$before" = "$after" ] && echo "store=unchanged" || echo "store=changed"
            rm -f '\(mountPoint)/filler'
            HOME='\(home.path)' '\(job)' --store '\(mountPoint)/store.sqlite' settings get runs.retention-days >/dev/null && echo "reopen=ok"
            """
        let result = try #require(try inMountNamespace(script))
        #expect(result.output.contains("exit=73"), "\(result.output)")
        #expect(result.output.contains("disk holding the store is full") || result.output.contains("could not be read or written"), "\(result.output)")
        #expect(result.output.contains("store=unchanged"), "\(result.output)")
        #expect(result.output.contains("reopen=ok"), "space freed: the store works again\n\(result.output)")
    }

    @Test(.enabled(if: DamagedStoreTests.canMount, "needs root and mount namespaces (CI runs as root)"))
    func aStoreOnAReadOnlyFileSystemExits73WithAMessageAboutPermissions() throws {
        try makeStore()
        let job = JobProcess.executablePath
        let mountPoint = home.file("ro")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let script = """
            set -e
            mount -t tmpfs -o size=8m tmpfs '\(mountPoint)'
            cp '\(store)' '\(mountPoint)/store.sqlite'
            mount -o remount,ro '\(mountPoint)'
            before=$(sha256sum '\(mountPoint)/store.sqlite' | cut -d' ' -f1)
            set +e
            HOME='\(home.path)' '\(job)' --store '\(mountPoint)/store.sqlite' maintain-store
            echo "exit=$?"
            after=$(sha256sum '\(mountPoint)/store.sqlite' | cut -d' ' -f1)
            [ "$before" = "$after" ] && echo "store=unchanged" || echo "store=changed"
            """
        let result = try #require(try inMountNamespace(script))
        #expect(result.output.contains("exit=73"), "\(result.output)")
        #expect(result.output.contains("read-only") || result.output.contains("cannot open the store"), "\(result.output)")
        #expect(result.output.contains("store=unchanged"), "\(result.output)")
    }
}
