import Chaos
import Foundation
import HTTPClient
import TestSupport

/// The relay's front door as deployed, on loopback: the real `job serve-relay` over a store, and a real nginx
/// running the shipped `jobs/nginx-relay.conf` (ports and a test certificate substituted) in front of it.
final class RelayFront {
    static let nginx = "/usr/sbin/nginx"
    static var isNginxInstalled: Bool { FileManager.default.isExecutableFile(atPath: nginx) }
    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    let directory = TemporaryDirectory("front")
    let testStore: TestStore
    var store: String { testStore.location }
    let environment: [String: String]
    private(set) var servers: [JobProcess.Running] = []
    private(set) var serverPorts: [Int] = []
    private var nginxProcess: Process?
    private(set) var nginxPort = 0
    private(set) var staticPort = 0
    var caFile: String { directory.file("tls.pem") }
    var url: String { "https://127.0.0.1:\(nginxPort)" }
    var directURL: String { "http://127.0.0.1:\(serverPorts[0])" }

    /// The store (of `kind`) and environment the servers get (`STOREKIT_*` for `chain`, the store's key file, plus `extra`).
    init(_ kind: StoreKind = .sqlite, cluster: PostgresCluster? = nil, chain: StoreKitChain?, extra: [String: String] = [:]) throws {
        testStore = try TestStore.make(kind, in: directory, file: "relay.sqlite", cluster: cluster)
        var env = JobProcess.environment(home: directory.path, ["STOREKIT_BUNDLE_ID": StoreKitChain.bundleID, "STOREKIT_PRODUCT_IDS": StoreKitChain.productID])
            .merging(testStore.environment) { $1 }
        if let chain { env["STOREKIT_ROOT_CA_FILE"] = chain.rootFile }
        for (key, value) in extra { env[key] = value }
        environment = env
    }

    /// Starts one more `serve-relay --listen 127.0.0.1:0` and waits for its `listening on` line.
    @discardableResult
    func startServer(_ options: [String] = [], now: String? = nil) throws -> Int {
        let running = try JobProcess.start(["--store", store] + (now.map { ["--now", $0] } ?? []) + ["serve-relay", "--listen", "127.0.0.1:0"] + options,
                                           environment: environment)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let line = running.stdoutSoFar.split(separator: "\n").first(where: { $0.hasPrefix("listening on 127.0.0.1:") }),
               let port = Int(line.split(separator: ":").last ?? "") {
                servers.append(running)
                serverPorts.append(port)
                return port
            }
            if !running.process.isRunning { break }
            usleep(20_000)
        }
        running.signal(SIGKILL)
        throw TestFailure("serve-relay did not start: \(running.stderrSoFar)")
    }

    /// Starts nginx with the shipped site in front of the first server, and a static-file server beside it.
    func startNginx() throws {
        let cert = directory.file("tls.pem"), key = directory.file("tls.key")
        let made = try ExternalTool.run(StoreKitChain.openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                                "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=127.0.0.1",
                                                                "-addext", "subjectAltName=IP:127.0.0.1"])
        guard made.status == 0 else { throw TestFailure("openssl: \(made.output)") }
        nginxPort = unusedPort()
        staticPort = unusedPort()
        let d = directory.path
        let (site, config) = try NginxRelayLab.render(
            shippedSite: try String(contentsOfFile: Self.repositoryRoot + "/jobs/nginx-relay.conf", encoding: .utf8), directory: d,
            upstreamPort: serverPorts[0], nginxPort: nginxPort, staticPort: staticPort, certificate: cert, key: key)
        try site.write(toFile: directory.file("site.conf"), atomically: true, encoding: .utf8)
        try "{\"status\":\"ok\",\"version\":\"1.0.0\"}".write(toFile: directory.file("health.json"), atomically: true, encoding: .utf8)
        try config.write(toFile: directory.file("nginx.conf"), atomically: true, encoding: .utf8)
        let test = try ExternalTool.run(Self.nginx, ["-t", "-c", directory.file("nginx.conf"), "-p", d])
        guard test.status == 0 else { throw TestFailure("nginx -t: \(test.output)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.nginx)
        process.arguments = ["-c", directory.file("nginx.conf"), "-p", d]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.file("nginx-error.log")))
        try process.run()
        nginxProcess = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let answer = try? client().send(HTTPRequest(url: url + "/api/v1/health")), answer.status == 200 { return }
            usleep(20_000)
        }
        throw TestFailure("nginx did not answer: \((try? String(contentsOfFile: directory.file("nginx-error.log"), encoding: .utf8)) ?? "")")
    }

    func client(timeout: Double = 10) -> HTTPClient {
        HTTPClient(options: HTTPClient.Options(connectTimeout: 5, totalTimeout: timeout, maxResponseBodyBytes: 1 << 16, httpVersion: .http1_1,
                                               tls: TLSOptions(caFile: caFile)))
    }

    /// `POST`s (or `method`s) `object` as JSON to `path` at `base` (nginx by default); returns status, JSON body and headers.
    @discardableResult
    func send(_ method: String = "POST", _ path: String, _ object: [String: Any]? = nil, raw: [UInt8]? = nil, contentType: String = "application/json",
              base: String? = nil) throws -> (status: Int, json: [String: Any], response: HTTPResponse) {
        let body = try raw ?? object.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        let request = HTTPRequest(method: method, url: (base ?? url) + path, headers: body == nil ? [] : [("Content-Type", contentType)], body: body)
        let response = try client().send(request)
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
        return (response.status, json, response)
    }

    /// Everything the servers wrote so far (stdout and stderr).
    var serverOutput: String { servers.map { $0.stdoutSoFar + $0.stderrSoFar }.joined(separator: "\n") }

    /// Stops nginx and every server (SIGTERM, then reaped); returns the servers' results.
    @discardableResult
    func stop() -> [JobProcess.Result] {
        if let nginxProcess, nginxProcess.isRunning {
            kill(nginxProcess.processIdentifier, SIGTERM)
            nginxProcess.waitUntilExit()
        }
        nginxProcess = nil
        let results = servers.compactMap { server -> JobProcess.Result? in
            server.signal(SIGTERM)
            return try? server.wait(timeout: 10)
        }
        servers = []
        return results
    }

    deinit { stop() }
}
