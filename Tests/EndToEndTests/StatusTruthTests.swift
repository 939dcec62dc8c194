import Foundation
import Testing
import TestSupport

/// `job status` shows a pass that holds its lease as running, and both the last completed and last failed pass.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct StatusTruthTests {
    let home = TemporaryDirectory("status-truth")
    var store: String { home.file("store.sqlite") }
    var env: [String: String] { JobProcess.environment(home: home.path) }

    func statusRow() throws -> [String: Any] {
        let status = try JobProcess.run(["--store", store, "status", "--json"], environment: env)
        let rows = try #require(try status.json() as? [[String: Any]])
        return try #require(rows.first { $0["job"] as? String == "maintain-store" })
    }

    @Test func aRunningPassIsShownRunningNotHiddenBehindALaterSkipAndLastCompletedAndFailedAreBothShown() throws {
        #expect(try JobProcess.run(["--store", store, "maintain-store"], environment: env).exitCode == 0)
        try StoreSeeding.ledger(at: store, home: home.path, oldRows: 100_000, batchSize: 50)
        let long = try JobProcess.start(["--store", store, "maintain-store"], environment: env)
        #expect(try StoreSeeding.waitUntil(timeout: 20) { try StoreSeeding.seededRows(at: store) < 100_000 })
        let skipped = try JobProcess.run(["--store", store, "maintain-store", "--json"], environment: env)
        #expect(try skipped.jsonObject()["reason"] as? String == "lease-held")

        let row = try statusRow()
        #expect(row["outcome"] as? String == "running")
        #expect(row["running_since"] is String)
        let text = try JobProcess.run(["--store", store, "status"], environment: env).stdout
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("maintain-store") && $0.contains(" running ") }, "\(text)")

        long.signal(SIGTERM)
        #expect(try long.wait(timeout: 30).exitCode == 75)
        let after = try statusRow()
        #expect(after["outcome"] as? String != "running", "the lease was released")
        let lastFailed = try #require(after["last_failed"] as? [String: Any])
        #expect(lastFailed["reason"] as? String == "cancelled")
        let lastCompleted = try #require(after["last_completed"] as? [String: Any])
        #expect(lastCompleted["exit_code"] as? Int == 0)
        #expect(lastCompleted["finished_at"] is String)
    }
}
