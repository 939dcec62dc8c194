import Foundation
@testable import Store

/// What the group-commit writer suites (SQLite and PostgreSQL) share: reading the test table's names and holding
/// the writer so that the requests queued meanwhile form the next batch together.
protocol GroupCommitProbing {}

extension GroupCommitProbing {
    func names(_ db: Database) throws -> Set<String> { Set(try db.query("SELECT name FROM t").map { try $0.get(0, as: String.self) }) }

    /// Queues a request that holds the writer until `release` is signalled, so the requests queued meanwhile
    /// form the next batch together.
    func holdWriter(_ writer: GroupCommitWriter, until release: DispatchSemaphore) {
        let holding = DispatchSemaphore(value: 0)
        writer.submit({ db in
            holding.signal()
            release.wait()
            // Longer than the batch's time bound: what queued meanwhile waits for the next batch.
            usleep(useconds_t(writer.maxBatchDuration * 2_000_000))
            try db.write { try $0.execute("INSERT INTO t (name) VALUES (?)", ["holder"]) }
        }, completion: { _ in })
        holding.wait()
    }
}
