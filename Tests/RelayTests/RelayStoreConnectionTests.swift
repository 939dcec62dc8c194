import Chaos
import Foundation
import Testing
import TestSupport

/// How an operator points `job` at a PostgreSQL relay store (README "The relay on PostgreSQL"), through the real
/// binary and a real server: a libpq service name defined in `PGSERVICEFILE`, the password in `PGPASSFILE` rather
/// than in the connection string, the store key and both files as systemd credentials, a role that only owns its
/// database.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct RelayStoreConnectionTests {
    /// The password of role `relay` (it must never show in job's output).
    static let password = "pw-3c1f0a9e7b"

    /// A cluster of its own where role `relay` (no superuser) owns database `relay` and must give its password
    /// (scram-sha-256) over the socket; `postgres` keeps trust for the harness.
    static func passwordCluster() throws -> PostgresCluster {
        let cluster = try PostgresCluster.start()
        try cluster.execute("CREATE ROLE relay LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '\(password)'")
        try cluster.execute("CREATE DATABASE relay OWNER relay")
        try cluster.stopServer()
        // Rewritten in place: the file stays the server user's (a new file would be root's, unreadable to it).
        let hba = cluster.dataDirectory + "/pg_hba.conf"
        let old = try String(contentsOfFile: hba, encoding: .utf8)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: hba))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(("local all relay scram-sha-256\n" + old).utf8))
        try handle.close()
        try cluster.startServer()
        return cluster
    }

    /// A credentials folder as systemd's `LoadCredential=` makes it: `store-key`, `pg-service` (the service `relay`,
    /// no password in it) and, when `pgpass` is given, `pgpass`.
    func credentials(_ cluster: PostgresCluster, in home: TemporaryDirectory, pgpass: String?) throws -> [String: String] {
        let folder = home.file("credentials")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try String(repeating: "5a", count: 32).write(toFile: folder + "/store-key", atomically: true, encoding: .utf8)
        try "[relay]\nhost=\(cluster.socketDirectory)\nport=\(cluster.port)\ndbname=relay\nuser=relay\n"
            .write(toFile: folder + "/pg-service", atomically: true, encoding: .utf8)
        var environment = ["CREDENTIALS_DIRECTORY": folder, "JOB_STORE": "service=relay", "PGSERVICEFILE": folder + "/pg-service"]
        if let pgpass {
            try pgpass.write(toFile: folder + "/pgpass", atomically: true, encoding: .utf8)
            chmod(folder + "/pgpass", 0o600)  // libpq ignores a password file its group or others can read
            environment["PGPASSFILE"] = folder + "/pgpass"
        }
        return JobProcess.environment(home: home.path, environment)
    }

    @Test func aServiceNameFromPGSERVICEFILEWithThePasswordFromPGPASSFILEReachesTheStoreAsARoleThatOnlyOwnsItsDatabase() throws {
        let cluster = try Self.passwordCluster()
        defer { cluster.stop() }
        let home = TemporaryDirectory("pg-service")
        let env = try credentials(cluster, in: home, pgpass: "*:*:relay:relay:\(Self.password)\n")
        let migrate = try JobProcess.run(["migrate"], environment: env)
        #expect(migrate.exitCode == 0, "\(migrate.stderr)")
        let status = try JobProcess.run(["--json", "status"], environment: env)
        #expect(status.exitCode == 0, "\(status.stderr)")
        let registered = try JobProcess.run(["--json", "relay", "register", "--device-id", Fixture.deviceID(7), "--apns-token", Fixture.token(7)], environment: env)
        #expect(registered.exitCode == 0 && registered.stdout.contains("\"status\":\"created\""), "\(registered.stdout) \(registered.stderr)")
        // The relay's tables are in database relay, created by (and owned by) role relay.
        #expect(try cluster.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'relay_devices'", database: "relay") == "relay")
        #expect(try Int(cluster.execute("SELECT count(*) FROM schema_migrations", database: "relay")) ?? 0 > 0)
        #expect(try cluster.execute("SELECT count(*) FROM relay_tokens", database: "relay") == "1")
        for result in [migrate, status, registered] { #expect(!(result.stdout + result.stderr).contains(Self.password)) }
    }

    @Test func withoutThePasswordFileOrWithAWrongPasswordTheStoreIsUnavailableAndNothingIsCreated() throws {
        let cluster = try Self.passwordCluster()
        defer { cluster.stop() }
        for pgpass in [nil, "*:*:relay:relay:not-\(Self.password)\n"] {
            let home = TemporaryDirectory("pg-nopass")
            let env = try credentials(cluster, in: home, pgpass: pgpass)
            let migrate = try JobProcess.run(["migrate"], environment: env)
            #expect(migrate.exitCode == 69, "\(migrate.stderr)")
            #expect(migrate.stderr.contains("the PostgreSQL store cannot be reached"), "\(migrate.stderr)")
            #expect(migrate.stderr.split(separator: "\n").count == 1, "\(migrate.stderr)")
            #expect(!migrate.stderr.contains(Self.password))
        }
        #expect(try cluster.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: "relay") == "0")
    }

    @Test func anUnknownServiceNameIsUnavailableRatherThanAnSQLiteFileOfThatName() throws {
        let home = TemporaryDirectory("pg-noservice")
        try "[other]\nhost=/nonexistent\n".write(toFile: home.file("pg-service"), atomically: true, encoding: .utf8)
        let env = JobProcess.environment(home: home.path, ["JOB_STORE": "service=relay", "PGSERVICEFILE": home.file("pg-service"),
                                                           "JOB_STORE_KEY_FILE": home.file("unused-key")])
        let status = try JobProcess.run(["status"], environment: env)
        #expect(status.exitCode == 69, "\(status.stderr)")
        #expect(status.stderr.contains("the PostgreSQL store cannot be reached"), "\(status.stderr)")
        #expect((try FileManager.default.contentsOfDirectory(atPath: home.path)).sorted() == ["pg-service"])
    }
}
