import Chaos
import Foundation
import HTTPClient
import Testing
import TestSupport

/// On PostgreSQL a `send-wakeups` pass claims due tokens `FOR UPDATE SKIP LOCKED`, so a token row another
/// host's transaction holds at that moment (an answer being recorded, a registration refreshed) is skipped. The
/// Device ID's trigger must then stay pending for that token, not be consumed by the pushes of its other tokens.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct MultiHostClaimTests {
    @Test func aTokenRowAnotherTransactionHoldsIsPushedByALaterPassNotDroppedWithItsTrigger() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let lab = try PostgresRelayLab("claim")
        let (directory, cluster, database, standIn, t0) = (lab.directory, lab.cluster, lab.database, lab.standIn, lab.t0)
        let device = MultiHostRelayChaos.deviceID(3)
        let first = MultiHostRelayChaos.token(3, 0), second = MultiHostRelayChaos.token(3, 1)
        #expect(try lab.run(at: t0, ["migrate"]).exitCode == 0)
        for token in [first, second] { #expect(try lab.run(at: t0, ["relay", "register", "--device-id", device, "--apns-token", token]).exitCode == 0) }
        #expect(try lab.run(at: t0, ["relay", "trigger", "--device-id", device]).exitCode == 0)

        // Another session holds the second token's row (as another host recording an answer would) during a pass.
        let script = directory.path + "/hold.sql", output = directory.path + "/hold.out"
        try "BEGIN;\nSELECT id FROM relay_tokens WHERE id = (SELECT max(id) FROM relay_tokens) FOR UPDATE;\nSELECT pg_sleep(300);\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        #expect(FileManager.default.createFile(atPath: output, contents: nil))
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: cluster.binDirectory + "/psql")
        holder.arguments = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", database.conninfo, "-f", script]
        holder.environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        holder.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        holder.standardError = holder.standardOutput
        try holder.run()
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() } }
        // The lock is held once the session sleeps.
        let sleeping = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(300)%'"
        while holder.isRunning, try cluster.execute(sleeping, database: database.name) != "1" { usleep(10_000) }
        #expect(holder.isRunning, "\((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")

        let whileHeld = try lab.run(at: t0 + 1, ["send-wakeups"])
        #expect(whileHeld.exitCode == 0 && ChaosProcess.counts(whileHeld.stdout)["delivered"] == 1, "\(whileHeld.stdout) \(whileHeld.stderr)")
        // The session ends (its transaction rolls back, the row is free again).
        try cluster.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(300)%'", database: database.name)
        holder.waitUntilExit()

        // After the window the held token is pushed for the same trigger; the first, answered for it, is not.
        let after = try lab.run(at: t0 + 40, ["send-wakeups"])
        #expect(after.exitCode == 0 && ChaosProcess.counts(after.stdout)["delivered"] == 1, "\(after.stdout) \(after.stderr)")
        #expect(try standIn.requests(since: 0).compactMap { $0["token"] as? String } == [first, second])
        let settled = try lab.run(at: t0 + 80, ["send-wakeups"])
        #expect(settled.exitCode == 0 && ChaosProcess.counts(settled.stdout)["devices"] == 0, "\(settled.stdout)")
    }
    /// A trigger whose serve-relay read its clock before a pass started but committed after the pass's claim carries
    /// a time older than the pass's: consuming "everything up to now" would swallow it unpushed.
    @Test func aTriggerRecordedDuringAPassWithAnEarlierClockStaysPendingAndIsPushedNext() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let lab = try PostgresRelayLab("late-trigger")
        let (directory, cluster, database, standIn, t0, environment) = (lab.directory, lab.cluster, lab.database, lab.standIn, lab.t0, lab.environment)
        let late = MultiHostRelayChaos.deviceID(5), other = MultiHostRelayChaos.deviceID(6)
        let lateToken = MultiHostRelayChaos.token(5, 0), otherToken = MultiHostRelayChaos.token(6, 0)
        #expect(try lab.run(at: t0, ["migrate"]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "register", "--device-id", late, "--apns-token", lateToken]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "register", "--device-id", other, "--apns-token", otherToken]).exitCode == 0)
        for device in [late, other] { #expect(try lab.run(at: t0, ["relay", "trigger", "--device-id", device]).exitCode == 0) }
        // The first Device ID's token was pushed and answered for its trigger by a pass that died before consuming it.
        try cluster.execute("UPDATE relay_tokens SET sent_at = \(t0 * 1000 + 1000), result_status = 200, result_at = \(t0 * 1000 + 1000) WHERE device_id = 1",
                            database: database.name)

        // A pass at t0+40 claims both and waits on the other Device ID's push (the stand-in answers after 2 s)…
        let scriptFile = directory.path + "/apns-script.json"
        var script = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: scriptFile))) as? [String: Any])
        script["answer_delay_ms"] = 2000
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: scriptFile))
        let pass = try JobProcess.start(["--store", database.url, "--now", "@\(t0 + 40)", "--json", "send-wakeups"], environment: environment)
        while pass.process.isRunning, try standIn.requests(since: 0).isEmpty { usleep(10_000) }
        // …while a trigger for the first one, read on a clock a second behind the pass's, is recorded.
        #expect(try lab.run(at: t0 + 39, ["relay", "trigger", "--device-id", late]).exitCode == 0)
        let passed = try pass.wait()
        #expect(passed.exitCode == 0 && ChaosProcess.counts(passed.stdout)["delivered"] == 1, "\(passed.stdout) \(passed.stderr)")

        // That trigger is still pending: after the window its token is pushed.
        let after = try lab.run(at: t0 + 80, ["send-wakeups"])
        #expect(after.exitCode == 0 && ChaosProcess.counts(after.stdout)["delivered"] == 1, "\(after.stdout) \(after.stderr)")
        #expect(try standIn.requests(since: 0).compactMap { $0["token"] as? String } == [otherToken, lateToken])
    }

    /// Found by the full-size multi-host run: a pass consumes an older trigger whose tokens another pass had already
    /// answered (and died before consuming), while a serve-relay on another host accepts a new trigger whose clock
    /// reads before that pass's — and commits after it. The new trigger must stay pending, not look pushed already
    /// (it came inside the window after that push: pushed when the window ends with `RELAY_TRAILING_PUSH=on`, only
    /// observed by default).
    @Test func aTriggerAcceptedWithAClockBeforeAPushConsumedMeanwhileStaysPendingAndIsPushed() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let lab = try PostgresRelayLab("late-commit")
        let (cluster, database, standIn, t0) = (lab.cluster, lab.database, lab.standIn, lab.t0)
        let device = MultiHostRelayChaos.deviceID(7), token = MultiHostRelayChaos.token(7, 0)
        #expect(try lab.run(at: t0, ["migrate"]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "register", "--device-id", device, "--apns-token", token]).exitCode == 0)
        #expect(try lab.run(at: t0, ["relay", "trigger", "--device-id", device]).exitCode == 0)
        // A pass at t0+10 pushed and recorded the answer, then was killed before consuming the trigger.
        try cluster.execute("UPDATE relay_tokens SET sent_at = \(t0 * 1000 + 10_000), result_status = 200, result_at = \(t0 * 1000 + 10_000)",
                            database: database.name)
        // A pass at t0+40 finds the trigger answered already: nothing to push, the trigger consumed.
        let consumer = try lab.run(at: t0 + 40, ["send-wakeups"])
        #expect(consumer.exitCode == 0 && ChaosProcess.counts(consumer.stdout)["pushes"] == 0, "\(consumer.stdout) \(consumer.stderr)")
        // Now a serve-relay whose clock read t0+35 accepts a new trigger: 25 s after the push, inside its window (the
        // window counts from the push at t0+10, not from the consuming pass's clock).
        let server = try JobProcess.start(["--store", database.url, "--now", "@\(t0 + 35)", "serve-relay", "--listen", "127.0.0.1:0", "--no-push"],
                                          environment: lab.environment.merging(["STOREKIT_BUNDLE_ID": "eu.vaultsync.app", "STOREKIT_PRODUCT_IDS": "relay"]) { $1 })
        defer { server.signal(SIGKILL) }
        var port: Int?
        for _ in 0..<500 where port == nil && server.process.isRunning {
            port = server.stdoutSoFar.split(separator: "\n").first { $0.hasPrefix("listening on 127.0.0.1:") }.flatMap { Int($0.split(separator: ":").last ?? "") }
            if port == nil { usleep(20_000) }
        }
        let listening = try #require(port, "serve-relay did not start: \(server.stderrSoFar)")
        let answer = try HTTPClient(options: HTTPClient.Options(connectTimeout: 2, totalTimeout: 10, httpVersion: .http1_1))
            .send(HTTPRequest(method: "POST", url: "http://127.0.0.1:\(listening)/api/v1/trigger", headers: [("Content-Type", "application/json")],
                              body: Array(#"{"device_id":"\#(device)"}"#.utf8)))
        #expect(answer.status == 202)
        // Debounced by default: never another push.
        let debounced = try lab.run(at: t0 + 75, ["send-wakeups"])
        #expect(debounced.exitCode == 0 && ChaosProcess.counts(debounced.stdout)["pushes"] == 0, "\(debounced.stdout) \(debounced.stderr)")
        // With the trailing push, once the window allows, the token is pushed for it.
        let next = try ChaosProcess(executable: JobProcess.executablePath, environment: lab.environment.merging(["RELAY_TRAILING_PUSH": "on"]) { $1 })
            .run(["--store", database.url, "--now", "@\(t0 + 75)", "--json", "send-wakeups"])
        #expect(next.exitCode == 0 && ChaosProcess.counts(next.stdout)["delivered"] == 1, "\(next.stdout) \(next.stderr)")
        #expect(try standIn.requests(since: 0).compactMap { $0["token"] as? String } == [token])
    }
}
