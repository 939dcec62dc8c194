import Foundation
import Store
import Testing
import TestSupport

/// Progress on stderr for long passes: on a terminal only, never in JSON mode or into a pipe.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct ProgressTests {
    static let hasScript = FileManager.default.isExecutableFile(atPath: "/usr/bin/script")

    @Test(.enabled(if: ProgressTests.hasScript, "needs script(1) from bsdutils for a pseudo-terminal"))
    func aPassOnATerminalShowsRowsDoneAndRateButNotWhenPiped() throws {
        let home = TemporaryDirectory("progress")
        let store = home.file("store.sqlite")
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 20_000, batchSize: 100)
        // Progress shows from the first batch, so the test does not depend on how fast this disk is.
        let env = JobProcess.environment(home: home.path, ["JOB_PROGRESS_DELAY_MS": "0"])
        // script(1) gives the pass a pseudo-terminal on stdout and stderr.
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", "'\(JobProcess.executablePath)' --store '\(store)' maintain-store", "/dev/null"], environment: env)
        let terminal = session.output
        #expect(session.status == 0, "\(terminal)")
        #expect(terminal.contains(" / 20000 rows, "), "progress shows rows done / total and a rate")
        #expect(terminal.contains("/s"))

        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 20_000, batchSize: 100)
        let piped = try JobProcess.run(["--store", store, "maintain-store"], environment: env, timeout: 120)
        #expect(piped.exitCode == 0)
        #expect(!piped.stderr.contains("rows,"), "no progress into a pipe")
    }

    @Test(.enabled(if: ProgressTests.hasScript, "needs script(1) from bsdutils for a pseudo-terminal"))
    func sweepGrantsShowsRowsDoneOnATerminal() throws {
        let home = TemporaryDirectory("progress-sweep")
        let store = home.file("store.sqlite")
        let env = JobProcess.environment(home: home.path, ["JOB_PROGRESS_DELAY_MS": "0"])
        #expect(try JobProcess.run(["--store", store, "migrate"], environment: env).exitCode == 0)
        try Database(path: store).write { db in
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
                INSERT INTO grants_issued (grant_index, grant_sealed, secret_sealed, endpoint_index, endpoint_sealed, lifetime_ms, created_at, expires_at)
                SELECT randomblob(16), x'00', x'00', x'01', x'00', 1000, 1, 1001 FROM n
                """)
        }
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", "'\(JobProcess.executablePath)' --store '\(store)' sweep-grants", "/dev/null"], environment: env)
        #expect(session.status == 0, "\(session.output)")
        #expect(session.output.contains(" rows, "), "\(session.output)")
    }

    @Test(.enabled(if: ProgressTests.hasScript, "needs script(1) from bsdutils for a pseudo-terminal"))
    func mediaInboxShowsFramesDoneOfTheInboxOnATerminal() throws {
        let home = TemporaryDirectory("progress-inbox")
        let store = home.file("store.sqlite")
        let env = JobProcess.environment(home: home.path, ["JOB_PROGRESS_DELAY_MS": "0"])
        #expect(try JobProcess.run(["--store", store, "mesh", "init", "--nickname", "p"], environment: env).exitCode == 0)
        // 300 frames no neighbour could have meant (each is handled and deleted as malformed).
        try Database(path: store).write { db in
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
                INSERT INTO mesh_inbox (frame, received_at) SELECT x'00', 1 FROM n
                """)
        }
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", "'\(JobProcess.executablePath)' --store '\(store)' media-inbox", "/dev/null"], environment: env)
        #expect(session.status == 0, "\(session.output)")
        #expect(session.output.contains(" / 300 rows, "), "\(session.output)")
    }

    @Test(.enabled(if: ProgressTests.hasScript, "needs script(1) from bsdutils for a pseudo-terminal"))
    func mediaOutboxShowsSendsPlannedOfTheOpenOnesOnATerminal() throws {
        let home = TemporaryDirectory("progress-outbox")
        let store = home.file("store.sqlite")
        let env = JobProcess.environment(home: home.path, ["JOB_PROGRESS_DELAY_MS": "0"])
        #expect(try JobProcess.run(["--store", store, "mesh", "init", "--nickname", "p"], environment: env).exitCode == 0)
        // 100 open sends whose sealed file is gone (each is planned as failed).
        try Database(path: store).write { db in
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
                INSERT INTO mesh_sends (peer_index, status, content_bytes, created_at, updated_at) SELECT x'01', 'queued', 1, 1, 1 FROM n
                """)
        }
        let session = try ExternalTool.run("/usr/bin/script", ["-qec", "'\(JobProcess.executablePath)' --store '\(store)' media-outbox", "/dev/null"], environment: env)
        #expect(session.status == 0, "\(session.output)")
        #expect(session.output.contains(" / 100 rows, "), "\(session.output)")
    }
}
