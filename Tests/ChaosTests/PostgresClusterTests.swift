import Chaos
import Foundation
import Testing
import TestSupport

/// The PostgreSQL test cluster the relay's store tests and `job-bench relay-scale` run on: a real server from
/// Debian's postgresql package, on a Unix socket in a temporary folder, reached by psql.
@Suite(.tags(.process, .postgres), .timeLimit(.minutes(15))) struct PostgresClusterTests {
    /// psql of the cluster's major, run as the current user (a client, like `job`).
    func psql(_ cluster: PostgresCluster, _ arguments: [String]) throws -> ExternalTool.Result {
        try ExternalTool.run(cluster.binDirectory + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"] + arguments,
                             environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"])
    }

    @Test func psqlCreatesATableInsertsAndReadsBackOverTheUnixSocketByConninfoAndByURL() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.shared()
        let database = try cluster.createDatabase(label: "rows")
        let write = try psql(cluster, ["-d", database.conninfo, "-c", "CREATE TABLE t (k int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'one'), (2, 'two')"])
        #expect(write.status == 0, "\(write.output)")
        let byConninfo = try psql(cluster, ["-d", database.conninfo, "-c", "SELECT k || '=' || v FROM t ORDER BY k"])
        #expect(byConninfo.status == 0 && byConninfo.output == "1=one\n2=two\n", "\(byConninfo.output)")
        let byURL = try psql(cluster, ["-d", database.url, "-c", "SELECT current_database() || ' ' || count(*) FROM t"])
        #expect(byURL.status == 0 && byURL.output == "\(database.name) 2\n", "\(database.url): \(byURL.output)")
        #expect(database.url.hasPrefix("postgresql://postgres@%2F"))
    }

    @Test func theServerListensOnItsUnixSocketOnlyAndNotOnTCP() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.shared()
        #expect(try cluster.execute("SHOW listen_addresses") == "")
        #expect(FileManager.default.fileExists(atPath: cluster.socketDirectory + "/.s.PGSQL.\(cluster.port)"))
        let tcp = try psql(cluster, ["-h", "127.0.0.1", "-p", "\(cluster.port)", "-U", PostgresCluster.superuser, "-d", "postgres", "-c", "SELECT 1"])
        #expect(tcp.status != 0 && tcp.output.contains("Connection refused"), "\(tcp.output)")
    }

    @Test func twoDatabasesOnOneClusterKeepTheirOwnRows() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.shared()
        let first = try cluster.createDatabase(label: "apart")
        let second = try cluster.createDatabase(label: "apart")
        #expect(first.name != second.name)
        try cluster.execute("CREATE TABLE t (v text); INSERT INTO t VALUES ('first')", database: first.name)
        try cluster.execute("CREATE TABLE t (v text); INSERT INTO t VALUES ('second'), ('second again')", database: second.name)
        #expect(try cluster.execute("SELECT string_agg(v, ',' ORDER BY v) FROM t", database: first.name) == "first")
        #expect(try cluster.execute("SELECT string_agg(v, ',' ORDER BY v) FROM t", database: second.name) == "second,second again")
    }

    @Test func badDatabaseNamesAndDuplicatesAreRefusedWithAClearMessage() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.shared()
        for bad in ["", "1abc", "Upper", "semi;colon", String(repeating: "a", count: 64)] {
            #expect(throws: PostgresClusterFailure.self, "\(bad)") { try cluster.createDatabase(bad) }
        }
        let database = try cluster.createDatabase(label: "twice")
        let error = #expect(throws: PostgresClusterFailure.self) { try cluster.createDatabase(database.name) }
        #expect(error?.description.contains("already exists") == true, "\(String(describing: error))")
    }

    @Test func theServerRunsAsAnUnprivilegedUser() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.shared()
        let pid = try #require(cluster.serverProcessID)
        var info = stat()
        #expect(stat("/proc/\(pid)", &info) == 0)
        #expect(info.st_uid != 0 && (geteuid() == 0 || info.st_uid == geteuid()), "server uid \(info.st_uid)")
    }

    @Test func aStoppedServerRefusesConnectionsAndARestartedOneStillHasItsRows() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.start()
        let database = try cluster.createDatabase("kept")
        try cluster.execute("CREATE TABLE t (v int); INSERT INTO t VALUES (7)", database: database.name)
        try cluster.stopServer()
        #expect(!cluster.isServerRunning)
        let down = try psql(cluster, ["-d", database.conninfo, "-c", "SELECT 1"])
        #expect(down.status != 0 && down.output.contains("No such file or directory"), "\(down.output)")
        #expect(throws: PostgresClusterFailure.self) { try cluster.execute("SELECT 1") }
        try cluster.startServer()
        #expect(try cluster.execute("SELECT v FROM t", database: database.name) == "7")
        try cluster.execute("INSERT INTO t VALUES (8)", database: database.name)
        try cluster.restart()
        #expect(try cluster.execute("SELECT string_agg(v::text, ',' ORDER BY v) FROM t", database: database.name) == "7,8")
    }

    @Test func aSIGKILLedServerIsDownAndRecoversItsCommittedRowsOnStart() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.start()
        let database = try cluster.createDatabase("crash")
        try cluster.execute("CREATE TABLE t (v int); INSERT INTO t SELECT generate_series(1, 1000)", database: database.name)
        let pid = try #require(cluster.serverProcessID)
        try cluster.kill9Server()
        #expect(!cluster.isServerRunning && (kill(pid, 0) != 0 || isZombie(pid)))
        #expect(throws: PostgresClusterFailure.self) { try cluster.execute("SELECT 1") }
        try cluster.startServer()
        #expect(try cluster.execute("SELECT count(*) FROM t", database: database.name) == "1000")
        #expect(try String(contentsOfFile: cluster.logFile, encoding: .utf8).contains("database system was interrupted"))
    }

    @Test func stopEndsTheServerAndRemovesItsFolder() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let cluster = try PostgresCluster.start()
        let pid = try #require(cluster.serverProcessID)
        cluster.stop()
        #expect(kill(pid, 0) != 0 || isZombie(pid))
        #expect(!FileManager.default.fileExists(atPath: cluster.directory))
        cluster.stop()  // a second stop does nothing
    }

    @Test func clustersStartedFromOneTemplatesFolderRunInitdbOnceAndEachKeepsItsOwnSettings() throws {
        // An initdb that counts its runs.
        let (bin, templates) = try serverProgramsAndTemplates { real, bin in "echo run >> '\(bin.file("initdb-runs"))'\nexec '\(real)/initdb' \"$@\"" }
        let count = bin.file("initdb-runs")

        let first = try PostgresCluster.start(binDirectory: bin.path, settings: ["max_connections": "21"], templates: templates.path)
        let second = try PostgresCluster.start(binDirectory: bin.path, settings: ["max_connections": "22"], templates: templates.path)
        defer { first.stop(); second.stop() }
        #expect(try String(contentsOfFile: count, encoding: .utf8) == "run\n")
        #expect(try first.execute("SHOW max_connections") == "21")
        #expect(try second.execute("SHOW max_connections") == "22")
        #expect(try second.execute("CREATE TABLE t (k int); INSERT INTO t VALUES (1); SELECT count(*) FROM t") == "1")
        #expect(try first.execute("SELECT count(*) FROM pg_tables WHERE tablename = 't'") == "0")
        // Without a templates folder, each cluster runs initdb itself.
        let own = try PostgresCluster.start(binDirectory: bin.path, templates: nil)
        own.stop()
        #expect(try String(contentsOfFile: count, encoding: .utf8) == "run\nrun\n")
    }

    @Test func anInitdbThatFailsForTheTemplateIsAClearErrorAndTheNextClusterMakesTheTemplateAgain() throws {
        // An initdb that fails on its first run (it leaves a half-made data folder behind) and works after.
        let (bin, templates) = try serverProgramsAndTemplates { real, bin in
            "if [ ! -e '\(bin.file("failed-once"))' ]; then : > '\(bin.file("failed-once"))'; for a; do case $a in /*) : > \"$a/PG_VERSION\";; esac; done; "
                + "echo 'initdb: disk full' >&2; exit 1; fi\nexec '\(real)/initdb' \"$@\""
        }

        let error = #expect(throws: PostgresClusterFailure.self) { try PostgresCluster.start(binDirectory: bin.path, templates: templates.path) }
        #expect(error?.description.contains("initdb failed (exit 1)") == true && error?.description.contains("disk full") == true, "\(String(describing: error))")
        let cluster = try PostgresCluster.start(binDirectory: bin.path, templates: templates.path)
        defer { cluster.stop() }
        #expect(try cluster.execute("SELECT 1") == "1")
    }

    /// The server programs in a folder of their own, with `initdb` the shell script `initdb(real bin folder, folder)`
    /// gives (run as the server's user, which may write in the folder), and an empty templates folder.
    func serverProgramsAndTemplates(initdb: (String, TemporaryDirectory) -> String) throws -> (TemporaryDirectory, TemporaryDirectory) {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let real = try #require(PostgresServerBinaries.find())
        let bin = TemporaryDirectory("pgbin")
        chmod(bin.path, 0o777)
        for program in ["pg_ctl", "postgres", "psql"] { try FileManager.default.createSymbolicLink(atPath: bin.file(program), withDestinationPath: real + "/" + program) }
        try ("#!/bin/sh\n" + initdb(real, bin) + "\n").write(toFile: bin.file("initdb"), atomically: true, encoding: .utf8)
        chmod(bin.file("initdb"), 0o755)
        let templates = TemporaryDirectory("pgtemplates")
        chmod(templates.path, 0o755)
        return (bin, templates)
    }

    @Test func aMissingServerIsAClearError() throws {
        let directory = TemporaryDirectory("nopg")
        let error = #expect(throws: PostgresClusterFailure.self) { try PostgresCluster.start(binDirectory: directory.path) }
        #expect(error?.description.contains("install Debian's postgresql package") == true, "\(String(describing: error))")
    }

    @Test func aServerThatCannotStartIsAnErrorCarryingItsLogTail() throws {
        try #require(PostgresServerBinaries.isInstalled, "Debian's postgresql package is required")
        let error = #expect(throws: PostgresClusterFailure.self) { try PostgresCluster.start(settings: ["shared_buffers": "plenty"]) }
        let message = error?.description ?? ""
        #expect(message.contains("pg_ctl start failed") && message.contains("invalid value for parameter \"shared_buffers\""), "\(message)")
    }

    /// A dead process its parent has not reaped yet.
    func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
        return stat[close...].hasPrefix(") Z")
    }
}
