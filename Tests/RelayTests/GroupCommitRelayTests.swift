import Foundation
import HTTPClient
import Relay
import Runner
import Store
import Testing
import TestSupport

/// `serve-relay` commits many triggers at once, on SQLite and on PostgreSQL (docs/group-commit.md): a trigger it
/// acknowledged is stored even when the process is SIGKILLed right after, concurrent triggers of one Device ID still
/// count exactly against its rate limit (through one process, or two on one PostgreSQL store), and the process
/// reports how many commits its writes took.
@Suite(.serialized, .tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct GroupCommitRelayTests {
    func cli(_ front: RelayFront, _ arguments: [String]) throws -> JobProcess.Result {
        try JobProcess.run(["--store", front.store] + arguments, environment: front.environment)
    }

    /// A store of `devices` operator-provisioned Device IDs (`Fixture.deviceID(1000 + i)`), none triggered yet.
    func provisioned(_ front: RelayFront, devices: Int) throws {
        #expect(try cli(front, ["relay", "register", "--device-id", Fixture.deviceID(1), "--apns-token", Fixture.token(1)]).exitCode == 0)
        let key = try StoreKeyLocation.resolve(environment: front.testStore.environment, storePath: front.store).load()
        let db = try Database(path: front.store)
        try RegistrationSeeder.seed(database: db, storeKey: key, devices: devices, tokensPerDevice: 1, registeredAt: 1_780_000_000_000, triggeredAt: nil,
                                    deviceID: { Fixture.deviceID(1000 + $0) }, token: { i, _ in Fixture.token(1000 + i) }, result: { _, _ in .none })
        try db.write { db in
            try db.execute("INSERT INTO relay_entitlements (device_id, kind, verified_at) SELECT id, 'operator', created_at FROM relay_devices WHERE id NOT IN (SELECT device_id FROM relay_entitlements)")
        }
    }

    /// POSTs a trigger for `device` straight to a server at `base`; its status, nil when no answer came.
    static func trigger(_ device: String, base: String) -> Int? {
        let client = HTTPClient(options: HTTPClient.Options(connectTimeout: 5, totalTimeout: 10, maxResponseBodyBytes: 1 << 16, httpVersion: .http1_1))
        let body = Array("{\"device_id\":\"\(device)\"}".utf8)
        return try? client.send(HTTPRequest(method: "POST", url: base + "/api/v1/trigger", headers: [("Content-Type", "application/json")], body: body)).status
    }

    func awaitingPush(_ front: RelayFront) throws -> Int {
        let shown = try cli(front, ["--json", "relay", "show"])
        return try shown.jsonObject()["devices_awaiting_push"] as? Int ?? -1
    }

    @Test(arguments: StoreKind.allCases) func everyTriggerAcknowledgedBeforeASigkillIsStored(_ kind: StoreKind) throws {
        let devices = 2_000
        let front = try RelayFront(kind, chain: nil)
        try provisioned(front, devices: devices)
        let acknowledged = Locked(Set<Int>())
        for round in 0..<3 {
            front.stop()
            try front.startServer(["--no-push"])
            let base = front.directURL
            let stop = Locked(false)
            let clients = 16
            let done = DispatchGroup()
            for client in 0..<clients {
                done.enter()
                Thread {
                    defer { done.leave() }
                    var n = client
                    while !stop.value && n < devices {
                        // Each Device ID is triggered once per round, so an acknowledged one is a stored one or a loss.
                        if Self.trigger(Fixture.deviceID(1000 + n), base: base) == 202 {
                            acknowledged.mutate { _ = $0.insert(n) }
                        }
                        n += clients
                    }
                }.start()
            }
            // Kill at a different moment each round, while requests are in flight.
            usleep(UInt32(300_000 + 250_000 * round))
            front.servers[0].signal(SIGKILL)
            stop.mutate { $0 = true }
            done.wait()
            _ = try? front.servers[0].wait(timeout: 10)
            let stored = try awaitingPush(front)
            #expect(acknowledged.value.count > 0, "round \(round): the kill came before any trigger was answered")
            // Rounds trigger the same Device IDs again; the store holds at least every one acknowledged so far.
            #expect(stored >= acknowledged.value.count, "round \(round): \(acknowledged.value.count) acknowledged, \(stored) stored")
            if stored < acknowledged.value.count { break }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentTriggersOfOneDeviceIDCountExactlyAgainstItsLimitAndTheServerReportsItsCommits(_ kind: StoreKind) throws {
        let front = try RelayFront(kind, chain: nil)
        try provisioned(front, devices: 64)
        let port = try front.startServer(["--no-push", "--threads", "8"])
        let base = "http://127.0.0.1:\(port)"
        let statuses = Locked([Int]())
        DispatchQueue.concurrentPerform(iterations: 30) { _ in
            let status = Self.trigger(Fixture.deviceID(1000), base: base) ?? -1
            statuses.mutate { $0.append(status) }
        }
        #expect(statuses.value.filter { $0 == 202 }.count == RelayAPIFacts.triggerLimit, "\(statuses.value.sorted())")
        #expect(statuses.value.filter { $0 == 429 }.count == 30 - RelayAPIFacts.triggerLimit, "\(statuses.value.sorted())")
        // Distinct Device IDs at once: all accepted, all stored.
        let others = Locked([Int]())
        DispatchQueue.concurrentPerform(iterations: 63) { i in
            let status = Self.trigger(Fixture.deviceID(1001 + i), base: base) ?? -1
            others.mutate { $0.append(status) }
        }
        #expect(others.value.allSatisfy { $0 == 202 }, "\(others.value.sorted())")
        #expect(try awaitingPush(front) == 64)
        let logs = front.stop().map(\.stderr).joined(separator: "\n")
        // 93 trigger writes; each commit is counted and there are never more commits than writes.
        let line = try #require(logs.split(separator: "\n").first { $0.contains("event=relay-api.stopped") })
        #expect(line.contains("writes=93"), "\(line)")
        let commits = Int(line.split(separator: " ").first { $0.hasPrefix("commits=") }?.dropFirst("commits=".count) ?? "") ?? -1
        #expect((1...93).contains(commits), "\(line)")
    }

    /// `field=N` of a server's `relay-api.stopped` line.
    static func stoppedField(_ name: String, in stderr: String) -> Int? {
        stderr.split(separator: "\n").last { $0.contains("event=relay-api.stopped") }?.split(separator: " ")
            .first { $0.hasPrefix(name + "=") }.flatMap { Int($0.dropFirst(name.count + 1)) }
    }

    @Test func twoServeRelaysBatchingOnOnePostgreSQLStoreCountOneDeviceIDExactlyAndStoreEveryAcceptedTrigger() throws {
        let front = try RelayFront(.postgresql, chain: nil)
        try provisioned(front, devices: 200)
        let bases = try (0..<2).map { _ in "http://127.0.0.1:\(try front.startServer(["--no-push", "--threads", "8"]))" }
        // One Device ID hammered through both hosts at once: their batches lock it in turn, and it is counted exactly.
        for round in 0..<3 {
            let device = Fixture.deviceID(1000 + round)
            let statuses = Locked([Int]())
            DispatchQueue.concurrentPerform(iterations: 40) { i in
                let status = Self.trigger(device, base: bases[i % 2]) ?? -1
                statuses.mutate { $0.append(status) }
            }
            #expect(statuses.value.filter { $0 == 202 }.count == RelayAPIFacts.triggerLimit, "round \(round): \(statuses.value.sorted())")
            #expect(statuses.value.filter { $0 == 429 }.count == 40 - RelayAPIFacts.triggerLimit, "round \(round): \(statuses.value.sorted())")
        }
        // Distinct Device IDs, each triggered through both hosts at once (their batches hold each other's Device IDs
        // in every order): every trigger accepted and stored, none waits on a deadlock.
        let others = Locked([Int]())
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: 394) { i in
            let status = Self.trigger(Fixture.deviceID(1003 + i / 2), base: bases[i % 2]) ?? -1
            others.mutate { $0.append(status) }
        }
        #expect(others.value.allSatisfy { $0 == 202 }, "\(others.value.sorted())")
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(try awaitingPush(front) == 200)
        let results = front.stop()
        #expect(results.allSatisfy { $0.exitCode == 0 }, "\(results.map(\.stderr))")
        // 120 + 394 trigger writes between the two hosts, never more commits than writes (how many share a commit
        // depends on how many requests arrive together, which a 2-core machine's clients do not promise).
        let writes = results.compactMap { Self.stoppedField("writes", in: $0.stderr) }
        let commits = results.compactMap { Self.stoppedField("commits", in: $0.stderr) }
        #expect(writes.count == 2 && writes.reduce(0, +) == 120 + 394, "\(results.map(\.stderr))")
        #expect(commits.count == 2 && commits.allSatisfy { $0 >= 1 } && commits.reduce(0, +) <= writes.reduce(0, +), "\(writes) \(commits)")
    }
}

/// The relay API's limits as the seed fixes them (10 triggers a minute per Device ID).
enum RelayAPIFacts {
    static let triggerLimit = 10
}

/// A value shared between test threads.
final class Locked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
