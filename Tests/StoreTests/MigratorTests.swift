import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Store

@Suite(.timeLimit(.minutes(15))) struct MigratorTests {
    let directory = TemporaryDirectory("migrate")

    static let migrations = [
        Migration("test-001-a", sql: "CREATE TABLE a (x INTEGER) STRICT;"),
        Migration("test-002-b", sql: "CREATE TABLE b (y INTEGER) STRICT; INSERT INTO b VALUES (1);"),
    ]

    @Test func migrationsApplyOnceAndAreRecordedByName() throws {
        let db = try Database(path: directory.file("m.sqlite"))
        let migrator = Migrator(MigratorTests.migrations)
        #expect(try migrator.migrate(db, now: 1) == ["test-001-a", "test-002-b"])
        #expect(try migrator.migrate(db, now: 2) == [])
        #expect(try db.scalar("SELECT count(*) FROM b") as Int? == 1)
        #expect(try db.query("SELECT name, applied_at FROM schema_migrations ORDER BY name").map { try $0.get(1, as: Int.self) } == [1, 1])
    }

    @Test func aLaterMigrationIsAppliedOnTopOfEarlierOnes() throws {
        let db = try Database(path: directory.file("m.sqlite"))
        try Migrator([MigratorTests.migrations[0]]).migrate(db, now: 1)
        #expect(try Migrator(MigratorTests.migrations).migrate(db, now: 2) == ["test-002-b"])
    }

    @Test func aFailingMigrationLeavesNoTraceOfAnyPendingMigration() throws {
        let db = try Database(path: directory.file("m.sqlite"))
        let broken = Migrator([MigratorTests.migrations[0], Migration("test-002-broken", sql: "CREATE TABLE c (z); SELECT nope FROM missing;")])
        #expect(throws: StoreError.self) { try broken.migrate(db, now: 1) }
        #expect(try db.scalar("SELECT count(*) FROM sqlite_schema WHERE name IN ('a', 'c')") as Int? == 0)
    }

    @Test func aStoreWithAMigrationThisBinaryDoesNotKnowIsRefusedAsNewer() throws {
        let db = try Database(path: directory.file("m.sqlite"))
        try Migrator(MigratorTests.migrations + [Migration("test-003-future", sql: "CREATE TABLE f (x);")]).migrate(db, now: 1)
        let older = Migrator(MigratorTests.migrations)
        let error = #expect(throws: NewerSchemaError.self) { try older.migrate(db, now: 2) }
        #expect(error?.unknownMigrationCount == 1)
        #expect(try db.scalar("SELECT count(*) FROM schema_migrations") as Int? == 3)
    }

    @Test func twoConnectionsMigratingAtOnceApplyEachMigrationExactlyOnce() throws {
        let path = directory.file("race.sqlite")
        let counter = directory.file("counter.sqlite")
        _ = try Database(path: counter)
        // Each migration appends a row, so a double application would show as two rows.
        let migrations = (1...20).map { i in Migration("race-\(i)", sql: "CREATE TABLE IF NOT EXISTS applied (n INTEGER) STRICT; INSERT INTO applied VALUES (\(i));") }
        let group = DispatchGroup()
        let failures = Failures()
        for _ in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let db = try Database(path: path)
                    try Migrator(migrations).migrate(db, now: 1)
                } catch { failures.append(error) }
            }.start()
        }
        group.wait()
        #expect(failures.all.isEmpty, "\(failures.all)")
        let db = try Database(path: path)
        #expect(try db.scalar("SELECT count(*) FROM applied") as Int? == 20)
    }
}

/// Errors collected from several threads.
final class Failures: Sendable {
    private let errors = Mutex<[any Error]>([])
    func append(_ error: any Error) { errors.withLock { $0.append(error) } }
    var all: [any Error] { errors.withLock { $0 } }
}

@Suite(.timeLimit(.minutes(15))) struct ConcurrentOpenTests {
    @Test func manyConnectionsOpeningOneNewFileAtOnceAllEndInWAL() throws {
        for round in 0..<(ProcessInfo.processInfo.environment["STRESS_ROUNDS"].flatMap(Int.init) ?? 100) {
            let directory = TemporaryDirectory("open")
            let path = directory.file("new-\(round).sqlite")
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do {
                    let db = try Database(path: path)
                    let mode: String? = try db.scalar("PRAGMA journal_mode")
                    if mode != "wal" { failures.append(StoreError.misuse("journal mode \(mode ?? "?")")) }
                } catch { failures.append(error) }
            }
            #expect(failures.all.isEmpty, "\(failures.all)")
        }
    }
}

import CSQLite

@Suite(.timeLimit(.minutes(15))) struct WALSwitchTests {
    @Test func openingWaitsForAReaderOfARollbackJournalFileAndThenSwitchesToWAL() throws {
        let directory = TemporaryDirectory("wal")
        let path = directory.file("legacy.sqlite")
        // Another program's connection: rollback journal, inside a read transaction (SHARED lock held).
        var other: OpaquePointer?
        #expect(sqlite3_open(path, &other) == SQLITE_OK)
        defer { sqlite3_close(other) }
        #expect(sqlite3_exec(other, "CREATE TABLE t (x); INSERT INTO t VALUES (1); BEGIN; SELECT * FROM t;", nil, nil, nil) == SQLITE_OK)
        let reader = UncheckedHandle(pointer: other)
        let releaser = Thread {
            Thread.sleep(forTimeInterval: 0.3)
            sqlite3_exec(reader.pointer, "COMMIT", nil, nil, nil)
        }
        releaser.start()
        let started = Date()
        let db = try Database(path: path)
        #expect(try db.scalar("PRAGMA journal_mode") as String? == "wal")
        #expect(Date().timeIntervalSince(started) >= 0.2, "the switch waited for the reader instead of failing")
    }
}

/// A C handle handed to one other thread, which alone uses it until it is done.
struct UncheckedHandle: @unchecked Sendable { let pointer: OpaquePointer? }

/// Migrations run with foreign keys off and are checked with `PRAGMA foreign_key_check` before they commit, as
/// SQLite's procedure for a schema change has it (docs/design.md §4).
@Suite(.timeLimit(.minutes(15))) struct MigrationForeignKeyTests {
    let directory = TemporaryDirectory("migrate-fk")

    static let parentAndChild = Migration("fk-001-parent-child", sql: """
        CREATE TABLE parent (id INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('a'))) STRICT;
        CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id) ON DELETE CASCADE) STRICT;
        CREATE INDEX child_by_parent ON child (parent_id);
        """)
    static let extraTable = Migration("fk-002-extra", sql: "CREATE TABLE extra (x INTEGER) STRICT; INSERT INTO extra VALUES (1);")

    /// A store with the first migration applied: two parents, three children.
    func storeWithRows() throws -> Database {
        let db = try Database(path: directory.file("fk.sqlite"))
        try Migrator([Self.parentAndChild]).migrate(db, now: 1)
        try db.execute("INSERT INTO parent VALUES (1, 'a'), (2, 'a'); INSERT INTO child VALUES (10, 1), (11, 1), (12, 2);")
        return db
    }

    func children(_ db: Database) throws -> [[Int64]] {
        try db.query("SELECT id, parent_id FROM child ORDER BY id").map { [try $0.get(0), try $0.get(1)] }
    }

    func appliedNames(_ db: Database) throws -> [String] {
        try db.query("SELECT name FROM schema_migrations ORDER BY name").map { try $0.get(0) }
    }

    @Test func aRebuildOfAReferencedTableKeepsTheRowsThatReferenceItAndForeignKeysAreOnAfter() throws {
        let db = try storeWithRows()
        // SQLite's twelve steps: new table, copy, drop the old one, rename — nothing copied aside for `child`.
        let widen = Migration("fk-002-widen-kind", sql: """
            CREATE TABLE parent_new (id INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('a', 'b'))) STRICT;
            INSERT INTO parent_new SELECT id, kind FROM parent;
            DROP TABLE parent;
            ALTER TABLE parent_new RENAME TO parent;
            """)
        #expect(try Migrator([Self.parentAndChild, widen]).migrate(db, now: 2) == ["fk-002-widen-kind"])
        #expect(try children(db) == [[10, 1], [11, 1], [12, 2]])
        #expect(try db.scalar("PRAGMA foreign_keys") as Int? == 1)
        #expect(try db.query("PRAGMA foreign_key_check").isEmpty)
        // The rebuilt table is the one `child` references, and the connection enforces the keys again.
        try db.execute("DELETE FROM parent WHERE id = 1")
        #expect(try children(db) == [[12, 2]])
        #expect(throws: StoreError.self) { try db.execute("INSERT INTO child VALUES (13, 99)") }
    }

    @Test func aMigrationThatLeavesARowWithoutItsParentIsRefusedAndNothingIsMigrated() throws {
        let db = try storeWithRows()
        let before = try StoreSnapshot(db)
        let orphaning = Migration("fk-003-drop-a-parent", sql: "DELETE FROM parent WHERE id = 2;")
        let error = #expect(throws: StoreError.self) {
            try Migrator([Self.parentAndChild, Self.extraTable, orphaning]).migrate(db, now: 2)
        }
        #expect(error?.kind == .constraint)
        #expect(error?.message == "migration fk-003-drop-a-parent leaves a row in child whose parent row in parent is missing; nothing was migrated")
        #expect(error.map { !"\($0)".contains("\n") } == true, "one line")
        #expect(try StoreSnapshot(db) == before, "schema and rows as they were, the earlier pending migration included")
        #expect(try appliedNames(db) == ["fk-001-parent-child"])
        #expect(try db.scalar("PRAGMA foreign_keys") as Int? == 1)
        #expect(throws: StoreError.self) { try db.execute("INSERT INTO child VALUES (13, 99)") }
    }

    @Test func aMigrationWhoseSQLFailsTurnsForeignKeysBackOn() throws {
        let db = try storeWithRows()
        let broken = Migration("fk-002-broken", sql: "SELECT nope FROM missing;")
        #expect(throws: StoreError.self) { try Migrator([Self.parentAndChild, broken]).migrate(db, now: 2) }
        #expect(try db.scalar("PRAGMA foreign_keys") as Int? == 1)
        #expect(try appliedNames(db) == ["fk-001-parent-child"])
    }

    @Test func aRowWithoutItsParentFromBeforeTheMigrationDoesNotStopItAndIsLeftAsItWas() throws {
        let db = try storeWithRows()
        // Another program (the sqlite3 shell has foreign keys off) deleted a parent.
        try db.execute("PRAGMA foreign_keys = OFF; DELETE FROM parent WHERE id = 2; PRAGMA foreign_keys = ON;")
        #expect(try Migrator([Self.parentAndChild, Self.extraTable]).migrate(db, now: 2) == ["fk-002-extra"])
        #expect(try db.query("PRAGMA foreign_key_check").count == 1)
        #expect(try children(db) == [[10, 1], [11, 1], [12, 2]])
        #expect(try db.scalar("PRAGMA foreign_keys") as Int? == 1)
    }
}
