import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for the tests and job-bench: `initdb` in a fresh temporary folder and a server
/// listening on a Unix socket in that folder only (`listen_addresses = ''`: no TCP listener at all), stopped and
/// removed by `stop()` or when released.
///
/// initdb and postgres refuse to run as root, so under root (CI, this machine) they run as `nobody` through
/// `setpriv`, in folders owned by `nobody`; otherwise they run as the current user. Clients (psql, libpq in `job`)
/// connect as the superuser `postgres` with trust authentication: the socket's folder is private to the server's
/// user (and root). Unless `durable`, the server runs with `fsync = off` (a killed server loses nothing, only a
/// machine crash would). `startServer`, `stopServer`, `restart` and `kill9Server` keep the data folder, for the
/// tests of a store that is down or restarted mid-run. Most tests share one cluster (`shared()`) and create their
/// own database on it (`createDatabase()`).
package final class PostgresCluster: Sendable {
    /// The superuser every connection uses.
    package static let superuser = "postgres"
    /// The server programs' folder (`/usr/lib/postgresql/<major>/bin`).
    package let binDirectory: String
    /// The cluster's temporary folder: `data/`, `socket/`, `server.log`.
    package let directory: String
    package var dataDirectory: String { directory + "/data" }
    /// The folder of the server's Unix socket (`.s.PGSQL.<port>`): libpq's `host`.
    package var socketDirectory: String { directory + "/socket" }
    /// The server's log (read into every failure).
    package var logFile: String { directory + "/server.log" }
    /// The port naming the socket file; no TCP listener uses it (it was a free loopback TCP port at start).
    package let port: Int

    /// `uid`/`gid` the server programs run as, nil for the current user.
    private let serverUser: ServerUser?
    private let removed = Mutex(false)
    private let databaseCounter = Mutex(0)
    /// The watchdog shell's process id.
    private let watchdog: Mutex<pid_t?>

    /// Creates the folder (under `parent`, else the temporary folder), runs initdb (or copies the data folder of
    /// `templates`, see PostgresCluster+Template) and starts the server. `settings` are further `postgresql.conf`
    /// lines (`max_connections`, `shared_buffers`…); `durable` keeps `fsync = on` (for benchmarks that want it).
    package static func start(binDirectory: String? = nil, settings: [String: String] = [:], durable: Bool = false,
                              parent: String? = nil, templates: String? = templatesFolder) throws -> PostgresCluster {
        guard let bin = binDirectory ?? PostgresServerBinaries.find() else {
            throw PostgresClusterFailure("no PostgreSQL server ≥ \(PostgresServerBinaries.minimumMajor) in /usr/lib/postgresql/<major>/bin (install Debian's postgresql package)")
        }
        guard PostgresServerBinaries.hasPrograms(bin) else {
            throw PostgresClusterFailure("\(bin) lacks one of \(PostgresServerBinaries.programs.joined(separator: ", ")) (install Debian's postgresql package)")
        }
        let cluster = try PostgresCluster(bin: bin, parent: parent)
        do {
            try cluster.initialize(settings: settings, durable: durable, templates: templates)
            try cluster.startServer()
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    private init(bin: String, parent: String?) throws {
        binDirectory = bin
        serverUser = geteuid() == 0 ? try ServerUser.nobody() : nil
        port = try FreeLoopbackPort.find()
        directory = try Self.makeDirectory(serverUser: serverUser, parent: parent ?? NSTemporaryDirectory())
        watchdog = Mutex(nil)
    }

    deinit { stop() }

    // MARK: The server

    /// Starts the server on the existing data folder (`pg_ctl start -w`); throws with the log's tail when it does
    /// not come up.
    package func startServer() throws {
        let result = try runServerProgram("pg_ctl", ["start", "-w", "-t", "60", "-s", "-D", dataDirectory, "-l", logFile])
        guard result.status == 0 else { throw failure("pg_ctl start failed (exit \(result.status)): \(result.output)") }
        startWatchdog()
    }

    /// Stops the server with a fast shutdown (SIGINT: sessions end, committed data stays), waiting until it has
    /// exited; does nothing when it is not running.
    package func stopServer() throws {
        guard let pid = postmasterPID(), isAlive(pid) else { return }
        kill(pid, SIGINT)
        guard waitUntilGone(pid, seconds: 60) else { throw failure("the server did not stop within 60 s") }
    }

    /// Stops and starts the server on the same data folder.
    package func restart() throws {
        try stopServer()
        try startServer()
    }

    /// SIGKILLs the server and all its processes at once, as a crash would; the next `startServer()` recovers from
    /// the write-ahead log.
    package func kill9Server() throws {
        guard let pid = postmasterPID(), isAlive(pid) else { return }
        kill(-pid, SIGKILL)  // pg_ctl starts the postmaster in its own session: the group is the server
        kill(pid, SIGKILL)
        guard waitUntilGone(pid, seconds: 30) else { throw failure("the server did not die within 30 s of SIGKILL") }
        // A dead postmaster nobody reaps stays a zombie, which postgres would take for a live owner of its lock
        // files: remove them as a reboot would.
        if FileManager.default.fileExists(atPath: "/proc/\(pid)") {
            try? FileManager.default.removeItem(atPath: dataDirectory + "/postmaster.pid")
            try? FileManager.default.removeItem(atPath: socketDirectory + "/.s.PGSQL.\(port).lock")
        }
    }

    /// True while the server process is alive.
    package var isServerRunning: Bool { postmasterPID().map(isAlive) ?? false }

    /// The running server's process id (the postmaster), nil when it is down.
    package var serverProcessID: pid_t? { postmasterPID().flatMap { isAlive($0) ? $0 : nil } }

    /// Stops the server (fast, then SIGKILL if it lingers) and removes the folder; later calls do nothing.
    package func stop() {
        let already = removed.withLock { value in defer { value = true }; return value }
        guard !already else { return }
        watchdog.withLock { pid in
            if let pid { kill(pid, SIGKILL); _ = ProgramSpawn.wait(pid) }
            pid = nil
        }
        if (try? stopServer()) == nil { try? kill9Server() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Databases and clients

    /// A database on the cluster and how libpq reaches it.
    package struct Database: Sendable {
        package let name: String
        /// libpq keyword/value form: `host='<socket folder>' port=<port> user='postgres' dbname='<name>'`.
        package let conninfo: String
        /// libpq URI form: `postgresql://postgres@<percent-encoded socket folder>:<port>/<name>`.
        package let url: String
    }

    /// How to reach `name` (which need not exist yet).
    package func database(_ name: String) -> Database {
        func quoted(_ value: String) -> String {
            "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        }
        let conninfo = "host=\(quoted(socketDirectory)) port=\(port) user=\(quoted(Self.superuser)) dbname=\(quoted(name))"
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let host = socketDirectory.addingPercentEncoding(withAllowedCharacters: allowed) ?? socketDirectory
        let path = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
        return Database(name: name, conninfo: conninfo, url: "postgresql://\(Self.superuser)@\(host):\(port)/\(path)")
    }

    /// Creates database `name` (lowercase letters, digits, `_`; at most 63) and returns how to reach it.
    @discardableResult
    package func createDatabase(_ name: String) throws -> Database {
        guard !name.isEmpty, name.count <= 63, name.first.map({ $0 == "_" || ("a"..."z").contains($0) }) == true,
              name.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }) else {
            throw PostgresClusterFailure("a database name is 1–63 of a-z, 0-9 and _, not starting with a digit")
        }
        try execute("CREATE DATABASE \(name)")
        return database(name)
    }

    /// Creates a database with a fresh name (`<label>_<n>`), so parallel tests on one cluster stay apart.
    @discardableResult
    package func createDatabase(label: String = "test") throws -> Database {
        let n = databaseCounter.withLock { value in value += 1; return value }
        return try createDatabase("\(label)_\(n)")
    }

    /// Runs `sql` with psql (`ON_ERROR_STOP`, unaligned, tuples only) in `database` and returns what it printed;
    /// throws with psql's message when it fails (the server is down, an SQL error).
    @discardableResult
    package func execute(_ sql: String, database name: String = "postgres") throws -> String {
        let result = try Self.run(binDirectory + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", database(name).conninfo, "-c", sql],
                                  prefix: [], in: directory)
        guard result.status == 0 else { throw PostgresClusterFailure("psql failed (exit \(result.status)): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The last `lines` lines of the server's log.
    package func logTail(lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    // MARK: Private

    private func initialize(settings: [String: String], durable: Bool, templates: String?) throws {
        if let folder = templates {
            let template = try Self.templateData(in: folder, binDirectory: binDirectory, serverUser: serverUser, initdb: runInitdb)
            // `cp -a` keeps the owner (the server's user) and the modes initdb gave.
            let copy = try Self.run("/bin/cp", ["-a", template + "/.", dataDirectory], prefix: [], in: directory)
            guard copy.status == 0 else { throw failure("cannot copy the initdb template \(template) (exit \(copy.status)): \(copy.output)") }
        } else {
            try runInitdb(dataDirectory)
        }
        var lines = ["listen_addresses = ''", "unix_socket_directories = '\(socketDirectory)'", "port = \(port)"]
        if !durable { lines.append("fsync = off") }
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            lines.append("\(key) = '\(value.replacingOccurrences(of: "'", with: "''"))'")
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(("\n# PostgresCluster (tests)\n" + lines.joined(separator: "\n") + "\n").utf8))
    }

    private func runInitdb(_ data: String) throws {
        let initdb = try runServerProgram("initdb", ["-D", data, "-U", Self.superuser, "--auth=trust", "--no-sync", "-E", "UTF8",
                                                     "--locale=C", "--no-instructions"])
        guard initdb.status == 0 else { throw failure("initdb failed (exit \(initdb.status)): \(initdb.output)") }
    }

    private func failure(_ message: String) -> PostgresClusterFailure {
        PostgresClusterFailure("\(message.trimmingCharacters(in: .whitespacesAndNewlines))\n--- server log (\(logFile)) ---\n\(logTail())")
    }

    private func runServerProgram(_ name: String, _ arguments: [String]) throws -> ToolResult {
        try Self.run(binDirectory + "/" + name, arguments, prefix: serverUser?.prefix ?? [], in: directory)
    }

    /// A shell that stops the server and removes the folder once this process is gone (a crash, a SIGKILLed test
    /// run), so no server outlives its tests.
    private func startWatchdog() {
        watchdog.withLock { current in
            guard current == nil else { return }
            let pidFile = dataDirectory + "/postmaster.pid"
            let script = """
                while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
                if [ -f '\(pidFile)' ]; then
                  pid=$(head -n 1 '\(pidFile)'); kill -INT "$pid" 2>/dev/null
                  n=0; while kill -0 "$pid" 2>/dev/null && [ -f '\(pidFile)' ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
                  kill -KILL -"$pid" 2>/dev/null
                fi
                rm -rf '\(directory)'
                """
            current = try? ProgramSpawn.start(["/bin/sh", "-c", script], directory: "/", environment: Self.environment, outputFile: nil, newSession: true)
        }
    }

    private func postmasterPID() -> pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first, let pid = pid_t(first.trimmingCharacters(in: .whitespaces)), pid > 0 else { return nil }
        return pid
    }

    /// Alive and not a zombie.
    private func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return !stat[close...].hasPrefix(") Z")
    }

    private func waitUntilGone(_ pid: pid_t, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isAlive(pid) {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }

    struct ToolResult { let status: Int32; let output: String }

    private static let environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "TZ": "UTC"]

    /// Runs a program to completion, its output (stdout and stderr) in a file, not a pipe: a server it starts must
    /// not hold our pipe open.
    private static func run(_ path: String, _ arguments: [String], prefix: [String], in directory: String) throws -> ToolResult {
        let outputFile = directory + "/tool-\(UUID().uuidString).out"
        guard FileManager.default.createFile(atPath: outputFile, contents: nil) else { throw PostgresClusterFailure("cannot create \(outputFile)") }
        defer { try? FileManager.default.removeItem(atPath: outputFile) }
        let pid = try ProgramSpawn.start(prefix + [path] + arguments, directory: directory, environment: environment, outputFile: outputFile)
        let status = ProgramSpawn.wait(pid)
        let text = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        return ToolResult(status: status, output: text)
    }

    /// The cluster's folder: under `parent` when every folder above it lets `nobody` through and the socket
    /// path fits (107 bytes), else under /tmp; `data/` and `socket/` owned by the server's user.
    private static func makeDirectory(serverUser: ServerUser?, parent: String) throws -> String {
        var parent = parent
        while parent.count > 1 && parent.hasSuffix("/") { parent.removeLast() }
        if (serverUser != nil && !ServerUser.othersCanTraverse(parent)) || parent.utf8.count > 48 { parent = "/tmp" }
        let path = "\(parent)/pg-\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
        let manager = FileManager.default
        try manager.createDirectory(atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        for sub in ["data", "socket"] {
            try manager.createDirectory(atPath: path + "/" + sub, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        }
        guard manager.createFile(atPath: path + "/server.log", contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw PostgresClusterFailure("cannot create \(path)/server.log")
        }
        if let serverUser {
            for item in ["data", "socket", "server.log"] where chown(path + "/" + item, serverUser.uid, serverUser.gid) != 0 {
                try? manager.removeItem(atPath: path)
                throw PostgresClusterFailure("cannot give \(path)/\(item) to the server's user (uid \(serverUser.uid)): errno \(errno)")
            }
        }
        return path
    }
}

/// The PostgreSQL cluster could not be set up, started or reached; the message carries the server log's tail.
package struct PostgresClusterFailure: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}
