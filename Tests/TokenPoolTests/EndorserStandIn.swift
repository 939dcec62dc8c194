import Foundation
import HTTPClient
import TestSupport

/// The Python Endorser stand-in (`Tests/Peers/endorser_standin.py`) on a loopback port, run with Debian's
/// `/usr/bin/python3`. It verifies each Bearer token independently (pure-Python secp256k1 and Keccak-256).
final class EndorserStandIn {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers/endorser_standin.py").path

    let process = Process()
    private let input = Pipe()
    let port: Int
    var baseURL: String { "http://127.0.0.1:\(port)" }
    private let client = HTTPClient(options: .init(connectTimeout: 5, totalTimeout: 10))

    init() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script]
        let out = Pipe()
        process.standardOutput = out
        // The stand-in exits when this pipe closes, so it cannot outlive a crashed test process.
        process.standardInput = input
        process.standardError = FileHandle.standardError
        try process.run()
        // The first line is "PORT <n>".
        var line = [UInt8]()
        while true {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            guard let b = byte.first else { throw TestFailure("the Endorser stand-in exited before printing its port") }
            if b == UInt8(ascii: "\n") { break }
            line.append(b)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else { throw TestFailure("unexpected stand-in output \(text)") }
        self.port = port
    }

    deinit { stop() }

    func stop() {
        // SIGKILL: the stand-in holds nothing worth a clean shutdown, and a signal mask inherited from the
        // test process cannot delay it.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Sets the stand-in's clock (Unix seconds), a forced status (nil: none) and a row count (nil: one per plan id).
    /// `retryAfter` is a `Retry-After` value sent with the forced status.
    func configure(now: Int64, status: Int? = nil, rows: Int? = nil, retryAfter: String? = nil, reset: Bool = false) throws {
        let body: [String: Any] = ["now": now, "status": status as Any? ?? NSNull(), "rows": rows as Any? ?? NSNull(),
                                   "retry_after": retryAfter as Any? ?? NSNull(), "reset": reset]
        let response = try client.send(HTTPRequest(method: "POST", url: baseURL + "/__control", headers: [("Content-Type", "application/json")],
                                                   body: Array(try JSONSerialization.data(withJSONObject: body))))
        guard response.status == 200 else { throw TestFailure("stand-in control failed: \(response.status)") }
    }

    /// The requests received so far.
    func requests() throws -> [[String: Any]] {
        let response = try client.send(HTTPRequest(url: baseURL + "/__requests"))
        return try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]] ?? []
    }

    /// Sends `token` straight to the endpoint, as Endorser would receive it; returns status and body.
    func present(_ token: String, planIDs: [String] = [], afterID: String = PoolHarness.afterID) throws -> (status: Int, body: String) {
        let body = try JSONSerialization.data(withJSONObject: ["planIds": planIDs, "afterId": afterID])
        let response = try client.send(HTTPRequest(method: "POST", url: baseURL + "/api/v2/report/plansLastUpdatedBetween",
                                                   headers: [("Content-Type", "application/json"), ("Authorization", "Bearer " + token)],
                                                   body: Array(body)))
        return (response.status, response.bodyText)
    }
}
