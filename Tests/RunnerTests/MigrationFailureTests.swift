import Testing
import TestSupport
@testable import Runner

/// How a migration refused by `PRAGMA foreign_key_check` reaches the user (docs/design.md §4).
@Suite(.timeLimit(.minutes(15))) struct MigrationFailureTests {
    @Test func aMigrationLeavingARowWithoutItsParentFailsWithExit70AndOneLineNamingItAndTheTable() throws {
        let directory = TemporaryDirectory("migration-failure")
        let db = try Database(path: directory.file("store.sqlite"))
        let tables = Migration("test-001-tables", sql: """
            CREATE TABLE parent (id INTEGER PRIMARY KEY) STRICT;
            CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id)) STRICT;
            INSERT INTO parent VALUES (1); INSERT INTO child VALUES (1, 1);
            """)
        try Migrator([tables]).migrate(db, now: 1)
        let orphaning = Migration("test-002-orphaning", sql: "DELETE FROM parent;")
        let error = #expect(throws: StoreError.self) { try Migrator([tables, orphaning]).migrate(db, now: 2) }
        let failure = StoreFailure.jobError(for: try #require(error))
        #expect(failure.exitCode == .software)
        #expect(failure.category == "internal")
        #expect(failure.message == "store error 787: migration test-002-orphaning leaves a row in child whose parent row in parent is missing; nothing was migrated")
        #expect(try db.scalar("SELECT count(*) FROM parent") as Int? == 1)
    }
}
