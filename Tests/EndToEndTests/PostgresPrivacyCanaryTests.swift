import Chaos
import Foundation
import Store
import Testing
import TestSupport

/// docs/design.md §5 on a PostgreSQL store: every relay command and job runs with canary identifiers and a connection
/// string carrying a canary password (the cluster trusts its socket, so the password is sent nowhere and any
/// copy of it in the output is ours); nothing any run prints — stdout, stderr, error lines, `--json` — and no
/// ledger row carries one. Failure paths too: an unreachable APNs host, a missing database, a malformed location.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct PostgresPrivacyCanaryTests {
    static let password = "CANARY-pg-password-4d4d"
    static let deviceID = PrivacyCanaryTests.deviceID
    static let apnsToken = PrivacyCanaryTests.apnsToken

    /// A connection string for `database` on `cluster` that carries the canary password.
    static func withPassword(_ url: String) -> String {
        url.replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://postgres:\(password)@")
    }

    @Test func noCanaryOrStorePasswordReachesAnyOutputOnAPostgreSQLStore() throws {
        let cluster = try PostgresCluster.shared()
        let database = try cluster.createDatabase(label: "canary")
        let home = TemporaryDirectory("pg-canary")
        let keyFile = home.file("store-key")
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        #expect(FileManager.default.createFile(atPath: keyFile, contents: Data(hex.utf8), attributes: [.posixPermissions: 0o600]))
        let apnsKey = home.file("CANARY-apns-key-file.p8")
        try P256PEM.write(to: apnsKey)
        let env = JobProcess.environment(home: home.path, [
            "JOB_STORE_KEY_FILE": keyFile,
            "APNS_KEY_FILE": apnsKey, "APNS_KEY_ID": PrivacyCanaryTests.keyID, "APNS_TEAM_ID": PrivacyCanaryTests.teamID,
            "APNS_TOPIC": PrivacyCanaryTests.topic, "APNS_URL": "https://\(PrivacyCanaryTests.apnsHost):9",
            "APNS_SANDBOX_URL": "https://\(PrivacyCanaryTests.apnsHost):9",
            "STOREKIT_BUNDLE_ID": "org.canary.bundle", "STOREKIT_PRODUCT_IDS": "org.canary.product",
            "JOB_LOG_LEVEL": "debug",
        ])
        let store = Self.withPassword(database.url)
        #expect(store.contains(Self.password))
        var runs: [(arguments: [String], result: JobProcess.Result)] = []
        func job(_ arguments: [String], store location: String = store) throws {
            runs.append((arguments, try JobProcess.run(["--store", location] + arguments, environment: env, timeout: 120)))
        }

        try job(["migrate"])
        try job(["--json", "migrate"])
        try job(["status"])
        try job(["--json", "status"])
        try job(["list"])
        try job(["relay", "register", "--device-id", Self.deviceID, "--apns-token", Self.apnsToken, "--environment", "sandbox"])
        try job(["relay", "register", "--device-id", PrivacyCanaryTests.otherDeviceID, "--apns-token", String(Self.apnsToken.reversed())])
        try job(["relay", "trigger", "--device-id", Self.deviceID])
        try job(["--json", "relay", "show"])
        try job(["send-wakeups"])
        try job(["--log-format", "json", "send-wakeups"])
        try job(["clean-tokens"])
        try job(["doctor"])
        try job(["--json", "doctor"])
        try job(["settings", "list"])
        try job(["maintain-store"])
        try job(["relay", "unregister", "--device-id", Self.deviceID, "--apns-token", Self.apnsToken])
        // serve-relay with a canary request that makes a push due: the send-wakeups pass it starts gets the store too.
        try job(["relay", "register", "--device-id", Self.deviceID, "--apns-token", Self.apnsToken])
        let relay = try JobProcess.start(["--store", store, "serve-relay", "--listen", "127.0.0.1:0"], environment: env)
        var port: Int?
        let deadline = Date().addingTimeInterval(20)
        while port == nil && Date() < deadline && relay.process.isRunning {
            port = relay.stdoutSoFar.split(separator: "\n").first { $0.hasPrefix("listening on 127.0.0.1:") }.flatMap { Int($0.split(separator: ":").last ?? "") }
            if port == nil { usleep(20_000) }
        }
        #expect(port != nil, "serve-relay started: \(relay.stderrSoFar)")
        if let port {
            let answer = try ExternalTool.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
                                                                "--data", "{\"device_id\":\"\(Self.deviceID)\"}", "http://127.0.0.1:\(port)/api/v1/trigger"])
            #expect(answer.output == "202")
            usleep(1_500_000)  // the pass it started reaches for the canary APNs host and fails
        }
        relay.signal(SIGTERM)
        runs.append((["serve-relay"], try relay.wait(timeout: 30)))
        // Failure paths with the password in the location: no such database, a malformed URI, an unknown option.
        try job(["status"], store: Self.withPassword(cluster.database("no_such_db").url))
        try job(["--json", "send-wakeups"], store: Self.withPassword(cluster.database("no_such_db").url))
        try job(["status"], store: "postgresql://postgres:\(Self.password)@[::1/x")
        try job(["status"], store: "postgresql://postgres:\(Self.password)@localhost:notaport/x")
        try job(["status"], store: "host=/nowhere password=\(Self.password) bogus")
        try job(["status"], store: "host=/nowhere password=\(Self.password) nosuchoption=1")

        let canaries = [Self.password, Self.deviceID, Self.deviceID.replacingOccurrences(of: "-", with: ""), PrivacyCanaryTests.otherDeviceID,
                        Self.apnsToken, Self.apnsToken.uppercased(), String(Self.apnsToken.reversed()), PrivacyCanaryTests.apnsHost,
                        PrivacyCanaryTests.keyID, PrivacyCanaryTests.teamID]
        for (arguments, result) in runs {
            for canary in canaries {
                #expect(!result.stderr.contains(canary), "stderr of \(arguments.prefix(3)) carries \(canary.prefix(8))…:\n\(result.stderr)")
                #expect(!result.stdout.contains(canary), "stdout of \(arguments.prefix(3)) carries \(canary.prefix(8))…:\n\(result.stdout)")
            }
        }
        let db = try Database(path: database.url)
        var ledger = ""
        try db.forEachRow("SELECT job, outcome, counts, coalesce(reason, '') FROM job_runs") { row in
            ledger += row.values.map { "\($0)" }.joined(separator: " ") + "\n"
        }
        #expect(!ledger.isEmpty)
        for canary in canaries { #expect(!ledger.contains(canary), "the ledger carries \(canary.prefix(8))…") }

        // Not vacuous: the runs did their work and met their failures.
        func exitCodes(_ first: String) -> [Int32] { runs.filter { $0.arguments.first == first }.map(\.result.exitCode) }
        #expect(runs.contains { $0.arguments == ["--json", "relay", "show"] && $0.result.stdout.contains("\"devices\":2") })
        #expect(exitCodes("send-wakeups").contains(75), "send-wakeups reached for the canary APNs host")
        #expect(runs.contains { $0.arguments == ["serve-relay"] && $0.result.exitCode == 0 && $0.result.stderr.contains("relay-api.pass_finished") })
        #expect(runs.filter { $0.arguments == ["status"] && $0.result.exitCode != 0 }.count == 5, "the failing locations failed")
        #expect(runs.filter { $0.arguments == ["status"] }.allSatisfy { $0.result.exitCode == 0 || $0.result.stderr.hasPrefix("job: ") })
        // Refused by the location check before libpq (64) or by libpq itself: either way named as not a valid string.
        #expect(runs.filter { $0.result.stderr.contains("not a valid PostgreSQL connection string") || $0.result.stderr.contains("neither a valid PostgreSQL connection string") }.count == 3,
                "the malformed URI, the keyword without a value and the unknown option are named as such")
    }
}
