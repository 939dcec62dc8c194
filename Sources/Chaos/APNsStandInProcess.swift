import Cryptography
import Foundation

/// The relay tests' APNs stand-in (`Tests/Peers/apns_standin.py`: HTTP/2 over TLS, checks every
/// header and the provider JWT, logs one JSON line per request) as a child process of the harness.
package final class APNsStandInProcess {
    package let directory: String
    package let keyFile: String
    package let keyID = "CHAOSKEY01"
    package let teamID = "CHAOSTEAM1"
    package let topic = "eu.vaultsync.app"
    public private(set) var port = 0
    private let process = Process()
    package var logFile: String { directory + "/apns-log.jsonl" }
    var scriptFile: String { directory + "/apns-script.json" }

    /// `Tests/Peers` of the source tree this was built from.
    package static var peersDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Peers").path
    }

    /// Starts the stand-in answering `answers` (hex token → (status, reason, 410 timestamp)), 200 otherwise.
    package init(directory: String, answers: [String: (status: Int, reason: String?, timestamp: Int64?)]) throws {
        self.directory = directory
        keyFile = directory + "/AuthKey.p8"
        try P256PrivateKey.generate().pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        var scripted: [String: Any] = [:]
        for (token, answer) in answers {
            var entry: [String: Any] = ["status": answer.status]
            if let reason = answer.reason { entry["reason"] = reason }
            if let timestamp = answer.timestamp { entry["timestamp"] = timestamp }
            scripted[token] = entry
        }
        let script: [String: Any] = ["p8": keyFile, "key_id": keyID, "team_id": teamID, "topic": topic, "answers": scripted,
                                     "reject_iat_before": NSNull(), "default": ["status": 200]]
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: scriptFile))
        guard FileManager.default.createFile(atPath: logFile, contents: nil) else { throw ChaosFailure("cannot create \(logFile)") }
        let portFile = directory + "/apns-port.txt"
        guard FileManager.default.createFile(atPath: portFile, contents: nil) else { throw ChaosFailure("cannot create \(portFile)") }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", Self.peersDirectory + "/apns_standin.py", "--script", scriptFile, "--log", logFile, "--cert-dir", directory]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: portFile))
        guard FileManager.default.createFile(atPath: directory + "/apns-stderr.txt", contents: nil) else { throw ChaosFailure("cannot create \(directory + "/apns-stderr.txt")") }
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/apns-stderr.txt"))
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while port == 0 && Date() < deadline && process.isRunning {
            let text = (try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""
            port = text.split(separator: "\n").first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) } ?? 0
            if port == 0 { usleep(50_000) }
        }
        guard port != 0 else {
            stop()
            throw ChaosFailure("the APNs stand-in did not start (needs /usr/bin/python3 with python3-h2 and python3-cryptography)")
        }
    }

    /// From now on, answers wait (requests are still logged as they arrive) until this is called with false, when
    /// the held answers leave at once. The stand-in re-reads its script when the file changes.
    package func holdAnswers(_ hold: Bool) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: scriptFile))
        guard var script = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw ChaosFailure("bad stand-in script") }
        script["hold_answers"] = hold
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: scriptFile), options: .atomic)
    }

    /// The `job` environment that sends to this stand-in.
    package var environment: [String: String] {
        ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID, "APNS_TOPIC": topic,
         "APNS_URL": "https://127.0.0.1:\(port)", "APNS_CA_FILE": directory + "/ca.pem"]
    }

    /// The log's current size: requests logged from here on belong to what follows.
    package func logOffset() -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: logFile))?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// The requests logged after `offset`.
    package func requests(since offset: UInt64) throws -> [[String: Any]] {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: logFile))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        let data = try handle.readToEnd() ?? Data()
        return try data.split(separator: UInt8(ascii: "\n")).map {
            guard let object = try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] else { throw ChaosFailure("bad stand-in log line") }
            return object
        }
    }

    package func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
