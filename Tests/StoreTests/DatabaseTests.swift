import Foundation
import Testing
import TestSupport
@testable import Store

@Suite(.timeLimit(.minutes(15))) struct DatabaseTests {
    let directory = TemporaryDirectory("store")

    func open(_ name: String = "s.sqlite") throws -> Database {
        let db = try Database(path: directory.file(name))
        try db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, name TEXT, data BLOB, score REAL) STRICT")
        return db
    }

    @Test func everyConnectionRunsInWALWithForeignKeysAndFullSync() throws {
        let db = try open()
        #expect(try db.scalar("PRAGMA journal_mode") as String? == "wal")
        #expect(try db.scalar("PRAGMA foreign_keys") as Int? == 1)
        #expect(try db.scalar("PRAGMA synchronous") as Int? == 2)  // FULL
        #expect(try db.scalar("PRAGMA auto_vacuum") as Int? == 2)  // INCREMENTAL
    }

    @Test func valuesOfEveryStorageClassRoundTrip() throws {
        let db = try open()
        try db.write { db in
            try db.execute("INSERT INTO t (id, name, data, score) VALUES (?, ?, ?, ?)", [1, "ünïcode ✓", [UInt8]([0, 1, 255]), 2.5])
            try db.execute("INSERT INTO t (id, name, data, score) VALUES (?, ?, ?, ?)", [2, Optional<String>.none, [UInt8](), DatabaseValue.null])
        }
        let first = try #require(try db.queryOne("SELECT name, data, score FROM t WHERE id = ?", [1]))
        #expect(try first.get("name", as: String.self) == "ünïcode ✓")
        #expect(try first.get("data", as: [UInt8].self) == [0, 1, 255])
        #expect(try first.get("score", as: Double.self) == 2.5)
        let second = try #require(try db.queryOne("SELECT name, data, score FROM t WHERE id = ?", [2]))
        #expect(try second.get("name", as: String?.self) == nil)
        #expect(second["data"] == .blob([]), "a zero-length blob stays a blob, not NULL")
        #expect(second["score"] == .null)
    }

    @Test func aWriteThatThrowsRollsBackEverything() throws {
        let db = try open()
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.write { db in
                try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [1, "a"])
                try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [2, "b"])
                throw Boom()
            }
        }
        #expect(try db.scalar("SELECT count(*) FROM t") as Int? == 0)
        #expect(!db.isInTransaction)
        // The connection is usable afterwards.
        try db.write { db in try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [3, "c"]) }
        #expect(try db.scalar("SELECT count(*) FROM t") as Int? == 1)
    }

    @Test func aConstraintFailureInsideAWriteRollsBackTheEarlierStatements() throws {
        let db = try open()
        try db.write { db in try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [1, "a"]) }
        #expect(throws: StoreError.self) {
            try db.write { db in
                try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [2, "b"])
                try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [1, "duplicate"])
            }
        }
        #expect(try db.query("SELECT id FROM t ORDER BY id").map { try $0.get(0, as: Int.self) } == [1])
    }

    @Test func aTransactionInsideATransactionIsRefused() throws {
        let db = try open()
        let error = #expect(throws: StoreError.self) {
            try db.write { db in try db.write { _ in } }
        }
        #expect(error?.kind == .misuse)
    }

    @Test func errorsCarryTheResultCodeAndTheSQLButNeverTheBoundValues() throws {
        let db = try open()
        try db.write { db in try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [7, "first"]) }
        let error = #expect(throws: StoreError.self) {
            try db.write { db in try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [7, "secret-canary-value"]) }
        }
        let failure = try #require(error)
        #expect(failure.kind == .constraint)
        #expect(failure.extendedCode == 1555)  // SQLITE_CONSTRAINT_PRIMARYKEY
        #expect(failure.sql == "INSERT INTO t (id, name) VALUES (?, ?)")
        #expect(!failure.description.contains("secret-canary-value"))
    }

    @Test func aSyntaxErrorInAScriptNamesTheFailingStatement() throws {
        let db = try open()
        let error = #expect(throws: StoreError.self) {
            try db.execute("CREATE TABLE a (x INTEGER) STRICT; CREATE TABLEE b (y); CREATE TABLE c (z)")
        }
        #expect(error?.sql == "CREATE TABLEE b (y);")
    }

    @Test func wrongArgumentCountIsAMisuseError() throws {
        let db = try open()
        let error = #expect(throws: StoreError.self) { try db.execute("INSERT INTO t (id, name) VALUES (?, ?)", [1]) }
        #expect(error?.kind == .misuse)
    }

    @Test func aFileThatIsNotADatabaseFailsAsNotADatabaseAndIsLeftUntouched() throws {
        let path = directory.file("garbage.sqlite")
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: StoreError.self) { _ = try Database(path: path) }
        #expect(error?.kind == .notADatabase)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aDatabaseWithADamagedPageReportsCorruptionWithoutRewritingTheFile() throws {
        let path = directory.file("damaged.sqlite")
        do {
            let db = try Database(path: path)
            try db.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, pad TEXT) STRICT")
            try db.write { db in
                for i in 0..<2000 { try db.execute("INSERT INTO big (id, pad) VALUES (?, ?)", [i, String(repeating: "x", count: 200)]) }
            }
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // Overwrite the middle of the file (table pages), leaving the header intact.
        for i in 20_000..<24_000 { bytes[i] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: path))
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let db = try Database(path: path)
        let error = #expect(throws: StoreError.self) { _ = try db.query("SELECT sum(length(pad)) FROM big") }
        #expect(error?.kind == .corrupt)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aReadOnlyFileRefusesWritesAsReadOnly() throws {
        let path = directory.file("ro.sqlite")
        do {
            let db = try Database(path: path)
            try db.execute("CREATE TABLE t (x INTEGER) STRICT")
        }
        chmod(path, 0o444)
        defer { chmod(path, 0o644) }
        guard getuid() != 0 else {
            // root ignores file modes; open the connection read-only instead to exercise the same path.
            var options = Database.Options()
            options.readOnly = true
            let db = try Database(path: path, options: options)
            let error = #expect(throws: StoreError.self) { try db.write { db in try db.execute("INSERT INTO t VALUES (?)", [1]) } }
            #expect(error?.kind == .readOnly)
            return
        }
        let db = try Database(path: path)
        let error = #expect(throws: StoreError.self) { try db.write { db in try db.execute("INSERT INTO t VALUES (?)", [1]) } }
        #expect(error?.kind == .readOnly)
    }

    @Test func aSecondConnectionsWriteWaitsForTheFirstInsteadOfFailingBusy() throws {
        let path = directory.file("busy.sqlite")
        try Database(path: path).execute("CREATE TABLE t (x INTEGER) STRICT")
        let released = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        let thread = Thread {
            // The holding connection is opened on, and confined to, its own thread: a Database is never shared.
            let first = try! Database(path: path)
            try! first.write { db in
                try db.execute("INSERT INTO t VALUES (?)", [1])
                holding.signal()
                Thread.sleep(forTimeInterval: 0.3)
            }
            released.signal()
        }
        thread.start()
        holding.wait()
        let opening = Date()
        let second = try Database(path: path)
        #expect(Date().timeIntervalSince(opening) < 0.2, "opening a connection does not wait for another's write")
        let started = Date()
        try second.write { db in try db.execute("INSERT INTO t VALUES (?)", [2]) }
        #expect(Date().timeIntervalSince(started) >= 0.1, "the write waited for the lock")
        released.wait()
        #expect(try second.scalar("SELECT count(*) FROM t") as Int? == 2)
    }

    @Test func aWriterBlockedBeyondItsBusyTimeoutFailsWithBusy() throws {
        let path = directory.file("timeout.sqlite")
        let holder = try Database(path: path)
        try holder.execute("CREATE TABLE t (x INTEGER) STRICT")
        var options = Database.Options()
        options.busyTimeoutMilliseconds = 150
        let waiter = try Database(path: path, options: options)
        try holder.execute("BEGIN IMMEDIATE")
        defer { try? holder.execute("ROLLBACK") }
        let started = Date()
        let error = #expect(throws: StoreError.self) { try waiter.write { db in try db.execute("INSERT INTO t VALUES (?)", [1]) } }
        let waited = Date().timeIntervalSince(started)
        #expect(error?.kind == .busy)
        #expect(waited >= 0.1 && waited < 2, "waited \(waited) s for a 150 ms timeout")
    }

    @Test func cachedStatementsAreReusedAcrossCalls() throws {
        let db = try open()
        let a = try db.cachedStatement("SELECT 1")
        let b = try db.cachedStatement("SELECT 1")
        #expect(a === b)
    }
}
