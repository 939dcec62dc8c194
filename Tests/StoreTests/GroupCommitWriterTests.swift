import Foundation
import Testing
import TestSupport
@testable import Store

/// The group-commit writer: many requests share one durable commit, each is answered only once the commit holding
/// its write returned, and a failing request (or a failing batch) never takes another request's write with it.
@Suite(.timeLimit(.minutes(15))) struct GroupCommitWriterTests: GroupCommitProbing {
    let directory = TemporaryDirectory("group-commit")
    var path: String { directory.file("w.sqlite") }

    struct Refused: Error, Equatable { let n: Int }

    func prepared() throws -> Database {
        let db = try Database(path: path)
        try db.execute("""
            CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE) STRICT;
            CREATE TABLE IF NOT EXISTS parent (id INTEGER PRIMARY KEY) STRICT;
            CREATE TABLE IF NOT EXISTS child (id INTEGER PRIMARY KEY,
                parent_id INTEGER NOT NULL REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED) STRICT;
            """)
        return db
    }

    @Test func requestsQueuedTogetherShareOneCommitAndEachIsAnsweredOnlyOnceItIsDurable() throws {
        let check = try prepared()
        let writer = GroupCommitWriter(path: path)
        let release = DispatchSemaphore(value: 0)
        holdWriter(writer, until: release)
        let answered = DispatchGroup()
        let visibleAtAnswer = Locked<[Bool]>([])
        let reader = try Database(path: path)
        let readerLock = NSLock()
        for n in 0..<100 {
            answered.enter()
            writer.submit({ db in try db.write { try $0.execute("INSERT INTO t (name) VALUES (?)", ["r\(n)"]) } }) { result in
                // Another connection sees the row when the answer comes: the commit holding it has returned.
                let seen = readerLock.withLock { (try? reader.scalar("SELECT count(*) FROM t WHERE name = ?", ["r\(n)"]) as Int?) == 1 }
                visibleAtAnswer.mutate { $0.append(seen && (try? result.get()) != nil) }
                answered.leave()
            }
        }
        release.signal()
        answered.wait()
        #expect(visibleAtAnswer.value.count == 100 && visibleAtAnswer.value.allSatisfy { $0 })
        #expect(try names(check).count == 101)
        writer.stop()
        // The holder's batch, then one batch for the hundred queued behind it.
        #expect(writer.statistics == GroupCommitWriter.Statistics(requests: 101, commits: 2, failedBatches: 0))
    }

    @Test func aRequestThatFailsIsRolledBackAloneAndTheOthersInItsBatchAreStored() throws {
        let check = try prepared()
        let writer = GroupCommitWriter(path: path)
        let release = DispatchSemaphore(value: 0)
        holdWriter(writer, until: release)
        let results = Locked<[Int: Result<Int, any Error>]>([:])
        let answered = DispatchGroup()
        for n in 0..<6 {
            answered.enter()
            writer.submit({ db -> Int in
                try db.write { db in
                    try db.execute("INSERT INTO t (name) VALUES (?)", ["half-\(n)"])
                    // Request 2 throws after writing; request 4 breaks a constraint (a name already taken in the batch).
                    if n == 2 { throw Refused(n: n) }
                    try db.execute("INSERT INTO t (name) VALUES (?)", [n == 4 ? "whole-0" : "whole-\(n)"])
                }
                return n
            }) { result in
                results.mutate { $0[n] = result }
                answered.leave()
            }
        }
        release.signal()
        answered.wait()
        writer.stop()
        let answers = results.value
        for n in [0, 1, 3, 5] { #expect((try? answers[n]?.get()) == n, "request \(n)") }
        #expect(throws: Refused(n: 2)) { try answers[2]!.get() }
        #expect(throws: StoreError.self) { try answers[4]!.get() }
        #expect(try names(check) == ["holder", "half-0", "whole-0", "half-1", "whole-1", "half-3", "whole-3", "half-5", "whole-5"])
        #expect(writer.statistics.commits == 2 && writer.statistics.failedBatches == 0)
    }

    @Test func aBatchWhoseCommitFailsRunsEachRequestAgainAloneAndOnlyTheCulpritFails() throws {
        let check = try prepared()
        try check.write { try $0.execute("INSERT INTO parent (id) VALUES (1)") }
        let writer = GroupCommitWriter(path: path)
        let release = DispatchSemaphore(value: 0)
        holdWriter(writer, until: release)
        let results = Locked<[Int: Result<Void, any Error>]>([:])
        let answered = DispatchGroup()
        for n in 0..<5 {
            answered.enter()
            // Request 3's child names a parent that does not exist: the deferred foreign key fails only at COMMIT,
            // so the whole batch's commit fails.
            writer.submit({ db in try db.write { try $0.execute("INSERT INTO child (id, parent_id) VALUES (?, ?)", [n + 10, n == 3 ? 99 : 1]) } }) { result in
                results.mutate { $0[n] = result }
                answered.leave()
            }
        }
        release.signal()
        answered.wait()
        writer.stop()
        let answers = results.value
        for n in [0, 1, 2, 4] { #expect((try? answers[n]?.get()) != nil, "request \(n): \(String(describing: answers[n]))") }
        #expect(throws: StoreError.self) { try answers[3]!.get() }
        let children = try check.query("SELECT id FROM child ORDER BY id").map { try $0.get(0, as: Int.self) }
        #expect(children == [10, 11, 12, 14])
        // The holder's batch, the failed batch, then each of the four good requests committed alone.
        #expect(writer.statistics == GroupCommitWriter.Statistics(requests: 6, commits: 5, failedBatches: 1))
    }

    @Test func concurrentWritersLoseNoIncrementAndAStoppedWriterRefusesNewRequests() throws {
        let check = try prepared()
        try check.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL) STRICT; INSERT INTO counter VALUES (1, 0)")
        let writer = GroupCommitWriter(path: path)
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            for _ in 0..<50 {
                // Read, then write: batched requests see each other's writes, as serial transactions would.
                _ = try? writer.perform { db in
                    try db.write { db in
                        let value: Int = try db.scalar("SELECT value FROM counter WHERE id = 1") ?? -1
                        try db.execute("UPDATE counter SET value = ? WHERE id = 1", [value + 1])
                    }
                }
            }
        }
        #expect(try check.scalar("SELECT value FROM counter WHERE id = 1") as Int? == 800)
        writer.stop()
        #expect(writer.statistics.requests == 800 && writer.statistics.commits <= 800)
        #expect(throws: GroupCommitWriter.Stopped.self) { try writer.perform { _ in 1 } }
    }

    @Test func aStoreThatCannotBeOpenedFailsEachRequestWithItsError() throws {
        let blocker = directory.file("not-a-folder")
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocker))
        let writer = GroupCommitWriter(path: blocker + "/s.sqlite")
        #expect(throws: StoreError.self) { try writer.perform { db in try db.write { try $0.execute("CREATE TABLE x (a)") } } }
        writer.stop()
        #expect(writer.statistics.commits == 0 && writer.statistics.requests == 1)
    }
}

/// A value shared between test threads.
final class Locked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
