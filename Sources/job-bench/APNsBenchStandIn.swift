import Chaos
import Foundation

/// An APNs stand-in for the push benches: HTTP/2 over TLS on loopback, answering 200 to every push, with a log of
/// the requests it received (count, 200s, refused checks, distinct connections).
///
/// - `nginx`: nginx (`/usr/sbin/nginx`, two workers) answering `POST /3/device/<token>` with an APNs-shaped 200 (an
///   `apns-id` header, no body) once it has read the body, 1,000 concurrent streams per connection as APNs allows,
///   the connection kept for every request. It checks nothing: fast enough not to be what a bench measures.
/// - `python`: the relay tests' stand-in (`Tests/Peers/apns_standin.py`), which checks every header and
///   the provider JWT's signature; single-threaded, so it caps a fast client.
final class APNsBenchStandIn {
    enum Kind: String {
        case nginx, python
    }

    let kind: Kind
    /// `https://127.0.0.1:<port>`.
    let url: String
    /// The certificate the stand-in serves, to pass as `APNS_CA_FILE` / `--cacert`.
    let caFile: String
    /// The stand-in's own process (its CPU time shows whether it was the bottleneck).
    var pid: pid_t { process.processIdentifier }
    private let process: Process
    private let log: String
    private let directory: String

    private init(kind: Kind, url: String, caFile: String, process: Process, log: String) {
        directory = URL(fileURLWithPath: log).deletingLastPathComponent().path
        self.kind = kind
        self.url = url
        self.caFile = caFile
        self.process = process
        self.log = log
    }

    /// Starts the stand-in in `directory`. The Python one verifies JWTs against the P-256 key in `keyFile`.
    static func start(_ kind: Kind, directory: String, keyFile: String, keyID: String, teamID: String, topic: String) throws -> APNsBenchStandIn {
        switch kind {
        case .nginx: return try startNginx(directory: directory)
        case .python: return try startPython(directory: directory, keyFile: keyFile, keyID: keyID, teamID: teamID, topic: topic)
        }
    }

    /// One request the stand-in logged.
    struct Entry {
        let connection: Int
        let status: Int
        /// The device token the push was addressed to.
        let token: String?
        /// A check the Python stand-in refused (nginx checks nothing).
        let refused: Bool
    }

    /// Every request logged so far, in order.
    func entries() throws -> [Entry] {
        try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { line in
            switch kind {
            case .nginx:
                // `$connection $status $uri`, one line per request.
                let fields = line.split(separator: " ")
                guard fields.count == 3, let connection = Int(fields[0]), let status = Int(fields[1]) else { return nil }
                let prefix = "/3/device/"
                return Entry(connection: connection, status: status,
                             token: fields[2].hasPrefix(prefix) ? String(fields[2].dropFirst(prefix.count)) : nil, refused: false)
            case .python:
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
                return Entry(connection: object["conn"] as? Int ?? 0, status: object["status"] as? Int ?? 0, token: object["token"] as? String,
                             refused: !(object["violation"] is NSNull))
            }
        }
    }

    /// What the stand-in logged so far: requests, 200s, refused checks, distinct connections.
    func received() throws -> (count: Int, ok: Int, violations: Int, connections: Int) {
        let all = try entries()
        return (all.count, all.filter { $0.status == 200 }.count, all.filter(\.refused).count, Set(all.map(\.connection)).count)
    }

    /// How many requests got each status so far (`200×9978 502×22`), for a failure message.
    func statusCounts() throws -> String {
        let counts = Dictionary(grouping: try entries(), by: \.status).mapValues(\.count)
        return counts.keys.sorted().map { "\($0)×\(counts[$0]!)" }.joined(separator: " ")
    }

    /// The processes that answer (nginx's master and its workers; the Python process).
    func processes() -> [pid_t] {
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        return [pid] + children.split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// The end of the stand-in's error log (nginx), for a failure message.
    func errorLogTail() -> String {
        guard kind == .nginx, let text = try? String(contentsOfFile: directory + "/apns-nginx-error.log", encoding: .utf8) else { return "" }
        return String(text.suffix(600))
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, kind == .nginx ? SIGTERM : SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }

    private static func startNginx(directory d: String) throws -> APNsBenchStandIn {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") else { throw BenchFailure("--stand-in nginx needs Debian's nginx (/usr/sbin/nginx)") }
        let made = try RelayBenchSupport.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                                  "-keyout", d + "/apns.key", "-out", d + "/apns.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
                                                                  "-addext", "subjectAltName=IP:127.0.0.1"])
        guard made.status == 0 else { throw BenchFailure("openssl: \(made.stderr)") }
        let port = try FreeLoopbackPort.find()
        let log = d + "/apns-access.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        // nginx 1.22: `listen … http2`; `keepalive_requests` also bounds the requests on one HTTP/2 connection, and
        // every open stream takes its own worker connection (so 1,024 would not hold 1,000 streams).
        let config = """
            worker_processes 2;
            user root;
            daemon off;
            pid \(d)/apns-nginx.pid;
            error_log \(d)/apns-nginx-error.log warn;
            events { worker_connections 8192; }
            http {
                client_body_temp_path \(d)/body; proxy_temp_path \(d)/proxy; fastcgi_temp_path \(d)/fastcgi;
                uwsgi_temp_path \(d)/uwsgi; scgi_temp_path \(d)/scgi;
                log_format apns '$connection $status $uri';
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(d)/apns.pem; ssl_certificate_key \(d)/apns.key;
                    ssl_protocols TLSv1.2 TLSv1.3;
                    http2_max_concurrent_streams 1000;
                    keepalive_requests 10000000;
                    keepalive_timeout 120s;
                    access_log \(log) apns;
                    # Each push's body is read whole (proxy_pass buffers it) and answered by a second server over a Unix
                    # socket: answered straight from `return`, nginx 1.22 resets the streams whose body is still
                    # arriving, which libcurl 7.88 reports as failed transfers.
                    location /3/device/ {
                        proxy_pass http://answer;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                    }
                    location / { return 404; }
                }
                # One upstream connection per stream in flight: with four senders' 2,000 streams, the default backlog
                # (511) overflows, connect() fails with EAGAIN and nginx answers 502, which the stand-in must never do.
                upstream answer { server unix:\(d)/apns-answer.sock; keepalive 1024; }
                server {
                    listen unix:\(d)/apns-answer.sock backlog=4096;
                    access_log off;
                    keepalive_requests 10000000;
                    location / {
                        add_header apns-id $request_id always;
                        return 200;
                    }
                }
            }
            """
        try config.write(toFile: d + "/apns-nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", d + "/apns-nginx.conf", "-p", d]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let standIn = APNsBenchStandIn(kind: .nginx, url: "https://127.0.0.1:\(port)", caFile: d + "/apns.pem", process: process, log: log)
        // Ready once it accepts connections (nothing is logged for a bare connect).
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if canConnect(port) { return standIn }
            usleep(20_000)
        }
        standIn.stop()
        throw BenchFailure("nginx did not start: \((try? String(contentsOfFile: d + "/apns-nginx-error.log", encoding: .utf8)) ?? "")")
    }

    private static func startPython(directory: String, keyFile: String, keyID: String, teamID: String, topic: String) throws -> APNsBenchStandIn {
        let script: [String: Any] = ["p8": keyFile, "key_id": keyID, "team_id": teamID, "topic": topic, "answers": [String: Any](), "default": ["status": 200]]
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: directory + "/script.json"))
        let log = directory + "/log.jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", APNsStandInProcess.peersDirectory + "/apns_standin.py", "--script", directory + "/script.json", "--log", log,
                             "--cert-dir", directory]
        let portFile = directory + "/port.txt"
        _ = FileManager.default.createFile(atPath: portFile, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        process.standardError = FileHandle.standardError
        try process.run()
        var port: Int?
        let deadline = Date().addingTimeInterval(15)
        while port == nil && Date() < deadline && process.isRunning {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            port = text.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) }
            if port == nil { usleep(50_000) }
        }
        let standIn = APNsBenchStandIn(kind: .python, url: "https://127.0.0.1:\(port ?? 0)", caFile: directory + "/ca.pem", process: process, log: log)
        guard port != nil else {
            standIn.stop()
            throw BenchFailure("the APNs stand-in did not start (needs /usr/bin/python3 with python3-h2 and python3-cryptography)")
        }
        return standIn
    }


    private static func canConnect(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
