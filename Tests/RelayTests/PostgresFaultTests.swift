import Chaos
import Foundation
import Store
import Testing
import TestSupport
@testable import Relay

/// The relay on a PostgreSQL store that fails under it, through the real `job` binary: a server down at start, a
/// server killed mid-pass or restarted under serve-relay, a location that names no usable database, a job of
/// another role, a store key not given. Each case checks the exit code, the one-line message and what the store
/// holds afterwards. Tests that stop or kill the server run their own cluster.
@Suite(.tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct PostgresFaultTests {
    let t0: Int64 = 1_780_000_000

    /// The `job: …` error lines of a run (a failed command prints exactly one).
    func errorLines(_ result: JobProcess.Result) -> [String] {
        result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("job: ") }
    }

    /// The tokens the stand-in received (one entry per request), oldest first.
    func pushed(_ standIn: APNsStandIn) throws -> [String] { try standIn.received().compactMap { $0["token"] as? String } }

    /// Runs `send-wakeups` at `t0` and SIGKILLs the server once the pass has recorded 50 answers; the pass's result.
    func passKilledMidPush(_ m: RelayMachine, _ cluster: PostgresCluster) throws -> JobProcess.Result {
        try m.passInterrupted(at: t0) { try cluster.kill9Server() }
    }

    @Test func relayCommandsExit69WhenTheServerIsDownAtStartAndTheStoreIsUntouched() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let m = try RelayMachine(.postgresql, cluster: cluster,
                                 environment: ["STOREKIT_BUNDLE_ID": StoreKitChain.bundleID, "STOREKIT_PRODUCT_IDS": StoreKitChain.productID])
        let device = Fixture.deviceID(1)
        try m.register(device, Fixture.token(1), at: t0)
        try m.trigger(device, at: t0)
        try cluster.stopServer()

        let commands: [[String]] = [
            ["send-wakeups"], ["clean-tokens"], ["relay", "register", "--device-id", Fixture.deviceID(2), "--apns-token", Fixture.token(2)],
            ["status"], ["migrate"], ["serve-relay", "--listen", "127.0.0.1:0", "--no-push"],
        ]
        for command in commands {
            let result = try m.run(command, at: t0 + 60, timeout: 30)
            #expect(result.exitCode == 69, "\(command): \(result.stderr)")
            let lines = errorLines(result)
            #expect(lines.count == 1 && lines[0].contains("the PostgreSQL store cannot be reached"), "\(command): \(result.stderr)")
            #expect(!result.stdout.contains("listening on"), "\(command) served without its store")
        }

        try cluster.startServer()
        let db = try m.database()
        #expect(try db.scalar("SELECT count(*) FROM relay_devices") == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens") == 1)
        #expect(try db.scalar("SELECT count(*) FROM relay_tokens WHERE sent_at IS NOT NULL OR result_at IS NOT NULL") == 0, "nothing was claimed")
        #expect(try db.scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at = ? AND last_push_at IS NULL", [t0 * 1000]) == 1,
                "the trigger still waits for its push")
    }

    /// The server is SIGKILLed while `send-wakeups` pushes 1,500 tokens to a slowed stand-in (answers one every 2 ms,
    /// 500 requests in flight): the pass exits 75, and
    /// once the server is back the store holds nothing half-written — no trigger consumed, only answers the stand-in
    /// gave — and the claims hold the tokens until the 30 s window has passed; then the next pass pushes what remains.
    @Test func aPassThatLosesItsConnectionMidPassExits75AndTheNextPassAfterTheWindowPushesWhatRemains() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let standIn = try APNsStandIn(answerDelayMilliseconds: 2)
        defer { standIn.stop() }
        let m = try RelayMachine(.postgresql, cluster: cluster, environment: standIn.environment())
        let devices = 750
        try m.register(Fixture.deviceID(1), Fixture.token(1), at: t0 - 600)  // creates the schema; never triggered
        let token = { (i: Int, j: Int) in Fixture.token(1000 + i * 2 + j) }
        try m.seed(devices: devices, tokensPerDevice: 2, registeredAt: (t0 - 600) * 1000, triggeredAt: (t0 - 1) * 1000,
                   deviceID: { Fixture.deviceID(1000 + $0) }, token: token)
        let due = Set((0..<devices).flatMap { i in [token(i, 0), token(i, 1)] })

        let lost = try passKilledMidPush(m, cluster)
        #expect(lost.exitCode == 75, "\(lost.stderr)")
        let lines = errorLines(lost)
        #expect(lines.count == 1 && lines[0].contains("the connection to the PostgreSQL store was lost"), "\(lost.stderr)")
        let pushedBeforeLoss = try pushed(standIn)
        #expect(pushedBeforeLoss.count < due.count, "the pass was cut before it pushed everything")

        try cluster.startServer()
        let after = try m.database()
        let recorded: Int = try after.scalar("SELECT count(*) FROM relay_tokens WHERE result_status IS NOT NULL") ?? -1
        #expect(recorded >= 50)
        #expect(recorded <= pushedBeforeLoss.count, "only answers the stand-in gave are recorded")
        #expect(try after.scalar("""
            SELECT count(*) FROM relay_devices d WHERE d.last_push_at >= d.last_trigger_at
            AND EXISTS (SELECT 1 FROM relay_tokens t WHERE t.device_id = d.id AND (t.result_at IS NULL OR t.result_at < d.last_trigger_at))
            """) == 0, "no Device ID's trigger consumed before all its pushes were answered")
        #expect(try after.scalar("SELECT count(*) FROM relay_tokens WHERE result_status IS NOT NULL AND sent_at IS NULL") == 0, "every answer has its claim")

        // Inside the window the claims hold: nothing is pushed again.
        let early = try m.sendWakeups(at: t0 + 5)
        #expect(early.exitCode == 0, "\(early.stderr)")
        #expect(try pushed(standIn).count == pushedBeforeLoss.count, "nothing pushed twice inside the window")
        try standIn.script(answers: [:])  // answers at full speed from here
        // A claim ends 15 s after it was made and is read as passed 30 s after its end (docs/roles/relay.md): after
        // that, everything not answered goes out; only pushes whose answers were lost with the connection repeat.
        let late = try m.sendWakeups(at: t0 + 46)
        #expect(late.exitCode == 0, "\(late.stderr)")
        let received = try pushed(standIn)
        #expect(Set(received) == due, "every due token pushed, no other")
        var times: [String: Int] = [:]
        for token in received { times[token, default: 0] += 1 }
        #expect(times.values.filter { $0 > 1 }.count <= pushedBeforeLoss.count - recorded, "repeated pushes are only the unrecorded ones")
        #expect(try after.scalar("SELECT count(*) FROM relay_tokens WHERE result_status = 200") == due.count)
        #expect(try after.scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at > coalesce(last_push_at, 0)") == 0)
    }

    /// A pass whose server stays down past its five retries cannot write its end to the ledger. It keeps the end on
    /// the host (`unrecorded-ends/` in the state folder), and the next pass there writes it before anything else: the
    /// row says failed, 75, `store-connection-lost`, not `running` and then `killed`, and the file is gone. A row a
    /// pass on another host marked `killed` meanwhile (`markedKilledElsewhere`) is corrected the same way.
    @Test(arguments: [false, true]) func aPassWhoseServerStaysDownPastItsRetriesIsRecordedAsFailedWithItsExitCodeByTheNextPassNotKilled(markedKilledElsewhere: Bool) throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let standIn = try APNsStandIn(answerDelayMilliseconds: 2)
        defer { standIn.stop() }
        let m = try RelayMachine(.postgresql, cluster: cluster, environment: standIn.environment())
        try m.seedPendingPushes(at: t0)

        let lost = try passKilledMidPush(m, cluster)
        #expect(lost.exitCode == 75, "\(lost.stderr)")
        let folder = m.home.path + "/.local/state/background-jobs/unrecorded-ends"
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).count == 1, "the end is kept on the host")

        try cluster.startServer()
        let after = try m.database()
        #expect(try after.scalar("SELECT outcome FROM job_runs ORDER BY id LIMIT 1") == "running", "the server was down: the row was left")
        if markedKilledElsewhere {
            try after.execute("UPDATE job_runs SET outcome = 'failed', exit_code = NULL, finished_at = ?, reason = 'killed' WHERE outcome = 'running'", [(t0 + 2) * 1000])
        }
        let next = try m.sendWakeups(at: t0 + 5)
        #expect(next.exitCode == 0, "\(next.stderr)")
        let first = try #require(try after.query("SELECT outcome, exit_code, reason, finished_at FROM job_runs ORDER BY id LIMIT 1").first)
        #expect(try first.get(0, as: String.self) == "failed" && first.get(1, as: Int?.self) == 75, "written by the next pass")
        #expect(try first.get(2, as: String?.self) == "store-connection-lost" && first.get(3, as: Int64?.self) != nil)
        #expect(try after.scalar("SELECT count(*) FROM job_runs WHERE reason = 'killed' OR outcome = 'running'") == 0)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).isEmpty)
    }

    /// serve-relay keeps running while its PostgreSQL server restarts: requests during the outage get 503 with
    /// Retry-After, the first request after the restart succeeds, and every trigger accepted (202) is in the store.
    @Test func serveRelayAnswers503DuringAServerRestartAndServesTheFirstRequestAfterIt() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let front = try RelayFront(.postgresql, cluster: cluster, chain: nil)
        let device = Fixture.deviceID(81), other = Fixture.deviceID(82)
        for (d, n) in [(device, 81), (other, 82)] {
            let registered = try JobProcess.run(["--store", front.store, "relay", "register", "--device-id", d, "--apns-token", Fixture.token(n)],
                                                environment: front.environment)
            #expect(registered.exitCode == 0, "\(registered.stderr)")
        }
        let port = try front.startServer(["--no-push", "--threads", "2"])
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202)

        try cluster.stopServer()
        for d in [device, other] {
            let answer = try front.send("POST", "/api/v1/trigger", ["device_id": d], base: base)
            #expect(answer.status == 503 && answer.json["error"] as? String == "store-unavailable", "\(answer.status) \(answer.json)")
            #expect(Int(answer.response.header("Retry-After") ?? "").map { $0 > 0 } == true)
        }
        #expect(try front.send("GET", "/api/v1/health", base: base).status == 200, "health does not need the store")

        try cluster.startServer()
        let before = Date().unixMilliseconds
        let first = try front.send("POST", "/api/v1/trigger", ["device_id": other], base: base)
        #expect(first.status == 202, "the first request after the restart: \(first.status) \(first.json)")
        #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202)
        let db = try Database(path: front.store)
        #expect(try db.scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at >= ? AND last_push_at IS NULL", [before]) == 2,
                "both accepted triggers are stored")
        // A restart with no request during it: the pooled connection is stale, and the next request is served all the same.
        try cluster.restart()
        let afterQuietRestart = Date().unixMilliseconds
        let quiet = try front.send("POST", "/api/v1/trigger", ["device_id": other], base: base)
        #expect(quiet.status == 202, "the first request after a quiet restart: \(quiet.status) \(quiet.json)")
        #expect(try Database(path: front.store).scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at >= ?", [afterQuietRestart]) == 1)
        let results = front.stop()
        #expect(results.allSatisfy { $0.exitCode == 0 }, "\(results.map(\.stderr))")
        #expect(results.map(\.stderr).joined().contains("answered_ok=5 refused=0 rate_limited=0 failed=2"), "\(results.map(\.stderr))")
    }

    @Test func aLocationWithoutAUsableDatabaseExits69AndAJobOfAnotherRoleExits64() throws {
        let cluster = try PostgresCluster.shared()
        let home = TemporaryDirectory("pg-neither")
        let keyFile = home.file("store.key")
        try TestStore.writeKey(to: keyFile)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE_KEY_FILE": keyFile])

        let missing = cluster.database("no_such_database").url
        for command in [["status"], ["send-wakeups"], ["relay", "show"]] {
            let result = try JobProcess.run(["--store", missing] + command, environment: env)
            #expect(result.exitCode == 69, "\(command): \(result.stderr)")
            let lines = errorLines(result)
            #expect(lines.count == 1 && lines[0].contains("cannot be reached"), "\(command): \(result.stderr)")
        }

        let store = try cluster.createDatabase(label: "roles")
        for command in [["sweep-grants"], ["mint-pool"], ["media-inbox"], ["retrigger-stale"], ["grants", "list"], ["pool", "show"], ["identity", "list"],
                        ["serve-link", "--listen", "127.0.0.1:0"]] {
            let result = try JobProcess.run(["--store", store.url] + command, environment: env)
            #expect(result.exitCode == 64, "\(command): \(result.stderr)")
            let lines = errorLines(result)
            #expect(lines.count == 1 && lines[0].contains("runs on an SQLite store only: a PostgreSQL store holds the relay role"), "\(command): \(result.stderr)")
        }
        #expect(try cluster.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'relay%' AND tablename NOT LIKE 'job%'",
                                    database: store.name) == "0", "no table of another role was made")
    }

    @Test func aPasswordTheServerRefusesExits69WithoutShowingIt() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        try cluster.execute("CREATE ROLE relay_writer LOGIN PASSWORD 'the-right-one'")
        try cluster.createDatabase("relay_auth")
        // Password authentication for this role on the socket, ahead of the cluster's trust lines.
        let hba = cluster.dataDirectory + "/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        try ("local all relay_writer scram-sha-256\n" + rules).write(toFile: hba, atomically: false, encoding: .utf8)
        try cluster.execute("SELECT pg_reload_conf()")

        let home = TemporaryDirectory("pg-password")
        let keyFile = home.file("store.key")
        try TestStore.writeKey(to: keyFile)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE_KEY_FILE": keyFile])
        let plain = cluster.database("relay_auth").url
        let wrong = plain.replacingOccurrences(of: "postgres@", with: "relay_writer:canary-wrong-secret@")
        #expect(wrong != plain)
        for command in [["status"], ["--json", "send-wakeups"], ["migrate"]] {
            let result = try JobProcess.run(["--store", wrong] + command, environment: env)
            #expect(result.exitCode == 69, "\(command): \(result.stderr)")
            let lines = errorLines(result)
            #expect(lines.count == 1 && lines[0].contains("cannot be reached"), "\(command): \(result.stderr)")
            #expect(!(result.stdout + result.stderr).contains("canary-wrong-secret"), "\(command) showed the password")
        }
        let right = plain.replacingOccurrences(of: "postgres@", with: "relay_writer:the-right-one@")
        try cluster.execute("GRANT ALL ON SCHEMA public TO relay_writer", database: "relay_auth")
        let migrated = try JobProcess.run(["--store", right, "migrate"], environment: env)
        #expect(migrated.exitCode == 0, "the right password works: \(migrated.stderr)")
        #expect(!(migrated.stdout + migrated.stderr).contains("the-right-one"))
    }

    @Test func aPostgreSQLStoreWithoutAKeyExits78AndNothingIsWritten() throws {
        let cluster = try PostgresCluster.shared()
        let store = try cluster.createDatabase(label: "nokey")
        let home = TemporaryDirectory("pg-nokey")
        let env = JobProcess.environment(home: home.path)
        let device = Fixture.deviceID(90)
        let storeKit = ["STOREKIT_BUNDLE_ID": StoreKitChain.bundleID, "STOREKIT_PRODUCT_IDS": StoreKitChain.productID]
        for command in [["relay", "register", "--device-id", device, "--apns-token", Fixture.token(90)], ["serve-relay", "--listen", "127.0.0.1:0"]] {
            let result = try JobProcess.run(["--store", store.url] + command, environment: env.merging(storeKit) { $1 })
            #expect(result.exitCode == 78, "\(command): \(result.stderr)")
            let lines = errorLines(result)
            #expect(lines.count == 1 && lines[0].contains("a PostgreSQL store needs its key given"), "\(command): \(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.path).isEmpty, "no key file was made anywhere in the home")
        // The schema is migrated (that needs no key); no registration was written.
        #expect(try cluster.execute("SELECT count(*) FROM relay_tokens", database: store.name) == "0")
        #expect(try cluster.execute("SELECT count(*) FROM relay_devices", database: store.name) == "0")
    }
}
