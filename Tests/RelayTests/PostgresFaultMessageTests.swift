import Chaos
import Foundation
import Store
import Testing
import TestSupport

/// PostgreSQL faults told in their own words, through the real `job` binary on a real server (docs/roles/relay.md,
/// "PostgreSQL faults"): a role without privileges (73), a server that accepts no writes and a statement the
/// server cancelled (75, transient), each with its own line and never libpq's or SQLite's text.
@Suite(.tags(.process, .postgres, .nginx), .timeLimit(.minutes(15))) struct PostgresFaultMessageTests {
    func errorLines(_ result: JobProcess.Result) -> [String] {
        result.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("job: ") }
    }

    /// libpq's and SQLite's wording that no fault line may carry.
    let foreignWords = ["permission denied", "read-only transaction", "canceling statement", "file's and folder's permissions", "stopped by a signal"]

    @Test func aRoleWithoutPrivilegesExits73AndAReadOnlyServerOrACancelledStatementExit75EachWithItsOwnLine() throws {
        let cluster = try PostgresCluster.shared()
        let store = try cluster.createDatabase(label: "faults")
        let home = TemporaryDirectory("pg-faults")
        let keyFile = home.file("store.key")
        try TestStore.writeKey(to: keyFile)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE_KEY_FILE": keyFile])
        func register(_ location: String, _ n: Int) throws -> JobProcess.Result {
            try JobProcess.run(["--store", location, "relay", "register", "--device-id", Fixture.deviceID(n), "--apns-token", Fixture.token(n)],
                               environment: env, timeout: 30)
        }
        #expect(try register(store.url, 1).exitCode == 0)

        // A role that may log in but holds no privilege on the store's tables.
        let role = "nopriv_" + store.name
        try cluster.execute("CREATE ROLE \(role) LOGIN")
        let unprivileged = store.url.replacingOccurrences(of: "postgres@", with: "\(role)@")
        for result in [try register(unprivileged, 2), try JobProcess.run(["--store", unprivileged, "relay", "show"], environment: env)] {
            let lines = errorLines(result)
            #expect(result.exitCode == 73 && lines.count == 1 && lines[0].contains("the PostgreSQL role lacks a privilege on the store"), "\(result.stderr)")
            #expect(!foreignWords.contains { result.stderr.contains($0) }, "\(result.stderr)")
        }

        // A server that accepts no writes (as a standby does): transient, so sender units retry.
        try cluster.execute("ALTER DATABASE \(store.name) SET default_transaction_read_only = on")
        let readOnly = try register(store.url, 3)
        #expect(readOnly.exitCode == 75 && errorLines(readOnly).count == 1
                && errorLines(readOnly)[0].contains("the PostgreSQL server accepts no writes (a standby, or a failover under way)"), "\(readOnly.stderr)")
        #expect(!foreignWords.contains { readOnly.stderr.contains($0) }, "\(readOnly.stderr)")
        try cluster.execute("ALTER DATABASE \(store.name) RESET default_transaction_read_only")

        // A statement the server cancels: statement_timeout while another session holds the table's lock.
        try cluster.execute("ALTER DATABASE \(store.name) SET statement_timeout = '500ms'")
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: cluster.binDirectory + "/psql")
        holder.arguments = ["-X", "-q", "-d", store.conninfo + " options='-c statement_timeout=0'",
                            "-c", "BEGIN; LOCK TABLE relay_devices IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(20); COMMIT;"]
        holder.currentDirectoryURL = URL(fileURLWithPath: cluster.directory)
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer { if holder.isRunning { holder.terminate(); holder.waitUntilExit() } }
        let lockDeadline = Date().addingTimeInterval(10)
        while Date() < lockDeadline,
              (try? cluster.execute("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'relay_devices' AND l.mode = 'AccessExclusiveLock' AND l.granted",
                                    database: store.name)) != "1" {
            usleep(50_000)
        }
        let cancelled = try register(store.url, 4)
        #expect(cancelled.exitCode == 75 && errorLines(cancelled).count == 1
                && errorLines(cancelled)[0].contains("the PostgreSQL server cancelled a statement (statement_timeout"), "\(cancelled.stderr)")
        #expect(!foreignWords.contains { cancelled.stderr.contains($0) }, "\(cancelled.stderr)")
        holder.terminate()
        holder.waitUntilExit()
        try cluster.execute("ALTER DATABASE \(store.name) RESET statement_timeout")
        #expect(try cluster.execute("SELECT count(*) FROM relay_devices", database: store.name) == "1", "nothing of the refused runs was written")
    }
}

extension PostgresFaultMessageTests {
    /// A server restarted with `standby.signal` stays in recovery (no primary to follow): a real standby, read-only.
    @Test func onAStandbyWritesExit75AsTransientAndDoctorReportsAStandby() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let store = try cluster.createDatabase(label: "standby")
        let home = TemporaryDirectory("pg-standby")
        let keyFile = home.file("store.key")
        try TestStore.writeKey(to: keyFile)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE_KEY_FILE": keyFile])
        func run(_ arguments: [String]) throws -> JobProcess.Result {
            try JobProcess.run(["--store", store.url] + arguments, environment: env, timeout: 60)
        }
        #expect(try run(["relay", "register", "--device-id", Fixture.deviceID(1), "--apns-token", Fixture.token(1)]).exitCode == 0)
        try cluster.stopServer()
        try Data().write(to: URL(fileURLWithPath: cluster.dataDirectory + "/standby.signal"))
        try cluster.startServer()
        #expect(try cluster.execute("SELECT pg_is_in_recovery()") == "t")

        for command in [["relay", "register", "--device-id", Fixture.deviceID(2), "--apns-token", Fixture.token(2)], ["relay", "trigger", "--device-id", Fixture.deviceID(1)]] {
            let result = try run(command)
            let lines = errorLines(result)
            #expect(result.exitCode == 75 && lines.count == 1 && lines[0].contains("the PostgreSQL server accepts no writes"), "\(command): \(result.stderr)")
            #expect(!foreignWords.contains { result.stderr.contains($0) }, "\(result.stderr)")
        }
        let doctor = try run(["doctor"])
        #expect(doctor.exitCode != 0 && (doctor.stdout + doctor.stderr).contains("the PostgreSQL server is a standby (in recovery)"), "\(doctor.stdout)\n\(doctor.stderr)")
        #expect(!foreignWords.contains { (doctor.stdout + doctor.stderr).contains($0) }, "\(doctor.stdout)\n\(doctor.stderr)")
    }
}

extension PostgresFaultMessageTests {
    /// TLS to the server with `sslmode=verify-full`: a certificate naming another host, and no root certificate to
    /// check it against, each exit 69 with its own reason (not "could not be reached").
    @Test func aTLSHostNameMismatchAndAMissingRootCertificateEachGetTheirOwnReason() throws {
        let cluster = try PostgresCluster.start(settings: ["listen_addresses": "127.0.0.1"])
        defer { cluster.stop() }
        let store = try cluster.createDatabase(label: "tls")
        let home = TemporaryDirectory("pg-tls")
        let cert = cluster.dataDirectory + "/server.crt", key = cluster.dataDirectory + "/server.key"
        let made = try ExternalTool.run(StoreKitChain.openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                                "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=localhost",
                                                                "-addext", "subjectAltName=DNS:localhost"])
        try #require(made.status == 0, "\(made.output)")
        let owner = try FileManager.default.attributesOfItem(atPath: cluster.dataDirectory)[.ownerAccountID] as? NSNumber
        for file in [cert, key] {
            try FileManager.default.setAttributes([.posixPermissions: 0o600, .ownerAccountID: owner ?? 0], ofItemAtPath: file)
        }
        try FileManager.default.copyItem(atPath: cert, toPath: home.file("root.pem"))
        for setting in ["ALTER SYSTEM SET ssl_cert_file = 'server.crt'", "ALTER SYSTEM SET ssl_key_file = 'server.key'", "ALTER SYSTEM SET ssl = on",
                        "SELECT pg_reload_conf()"] {
            try cluster.execute(setting)
        }
        usleep(500_000)
        let keyFile = home.file("store.key")
        try TestStore.writeKey(to: keyFile)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE_KEY_FILE": keyFile])
        let base = "host=127.0.0.1 port=\(cluster.port) user=postgres dbname=\(store.name) sslmode=verify-full"
        // The right name and root work, so the two failures below are the certificate's alone.
        let good = try JobProcess.run(["--store", "host=localhost port=\(cluster.port) user=postgres dbname=\(store.name) sslmode=verify-full sslrootcert=\(home.file("root.pem"))",
                                       "status"], environment: env)
        #expect(good.exitCode == 0, "\(good.stderr)")
        let cases = [(base + " sslrootcert=\(home.file("root.pem"))", "the server's TLS certificate does not name the host connected to"),
                     (base + " sslrootcert=\(home.file("no-such-root.pem"))", "no root certificate to check the server's TLS certificate against")]
        for (location, reason) in cases {
            let result = try JobProcess.run(["--store", location, "status"], environment: env)
            let lines = errorLines(result)
            #expect(result.exitCode == 69 && lines.count == 1 && lines[0].contains("the PostgreSQL store cannot be reached (\(reason)"), "\(result.stderr)")
            #expect(!result.stderr.contains("does not match host name") && !result.stderr.contains("does not exist"), "\(result.stderr)")
        }
    }
}

extension PostgresFaultMessageTests {
    /// An immediate shutdown (SIGQUIT to the postmaster: every backend is told so with a WARNING and dropped) and a
    /// start: the first request after it is served, and libpq's own WARNING/FATAL lines never reach stderr.
    @Test func theFirstRequestAfterAnImmediateRestartIsServedAndLibpqsOwnLinesNeverReachStderr() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let front = try RelayFront(.postgresql, cluster: cluster, chain: nil)
        let devices = (0..<4).map { Fixture.deviceID(140 + $0) }
        for (index, device) in devices.enumerated() {
            let registered = try JobProcess.run(["--store", front.store, "relay", "register", "--device-id", device, "--apns-token", Fixture.token(140 + index)],
                                                environment: front.environment)
            #expect(registered.exitCode == 0, "\(registered.stderr)")
        }
        let port = try front.startServer(["--no-push", "--threads", "4"])
        defer { front.stop() }
        let base = "http://127.0.0.1:\(port)"
        for device in devices { #expect(try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base).status == 202) }
        for _ in 0..<2 {
            let pid = try #require(cluster.serverProcessID)
            kill(pid, SIGQUIT)
            let gone = Date().addingTimeInterval(30)
            while cluster.isServerRunning && Date() < gone { usleep(20_000) }
            try cluster.startServer()
            for device in devices {
                let answer = try front.send("POST", "/api/v1/trigger", ["device_id": device], base: base)
                #expect(answer.status == 202, "a request after an immediate restart: \(answer.status) \(answer.json)")
            }
        }
        let results = front.stop()
        let stderr = results.map(\.stderr).joined(separator: "\n")
        #expect(!stderr.contains("WARNING:") && !stderr.contains("FATAL:") && !stderr.contains("terminating connection"), "\(stderr)")
    }
}

extension PostgresFaultMessageTests {
    /// The server restarts under a pass that is pushing: the pass exits 75, and its ledger row says so (written on a
    /// new connection once the server is back), never `killed`.
    @Test func aPassThatExits75BecauseTheServerRestartedIsRecordedAsItWasNotAsKilled() throws {
        let t0: Int64 = 1_780_000_000
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let standIn = try APNsStandIn(answerDelayMilliseconds: 2)
        defer { standIn.stop() }
        let m = try RelayMachine(.postgresql, cluster: cluster, environment: standIn.environment())
        try m.seedPendingPushes(at: t0)
        let lost = try m.passInterrupted(at: t0) { try cluster.restart() }
        #expect(lost.exitCode == 75, "\(lost.stderr)")
        let after = try m.database()
        let rows = try after.query("SELECT outcome, exit_code, reason FROM job_runs WHERE job = 'send-wakeups' ORDER BY id")
        let ledger = try rows.map { row in "\(try row.get(0, as: String.self)) \(try row.get(1, as: Int?.self).map(String.init) ?? "-") \(try row.get(2, as: String?.self) ?? "-")" }
        #expect(ledger.last == "failed 75 store-connection-lost", "the ledger: \(ledger)")
        #expect(try after.scalar("SELECT count(*) FROM job_leases WHERE job LIKE 'send-wakeups%'") == 0, "the lease was given up with it")
    }
}
