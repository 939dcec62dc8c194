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
