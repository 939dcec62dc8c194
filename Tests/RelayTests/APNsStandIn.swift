import Cryptography
import Foundation
import TestSupport

/// The APNs stand-in (`Peers/apns_standin.py`) with its script, log and the provider key it verifies.
final class APNsStandIn {
    let directory = TemporaryDirectory("apns")
    let peer: PeerProcess
    let keyFile: String
    let keyID = "KEY1234567"
    let teamID = "TEAM987654"
    let topic = "eu.vaultsync.app"
    var url: String { "https://127.0.0.1:\(peer.port)" }
    var caFile: String { directory.file("ca.pem") }
    var logFile: String { directory.file("log.jsonl") }

    /// A token's scripted answer.
    struct Answer {
        var status: Int
        var reason: String? = nil
        var timestamp: Int64? = nil
    }

    /// `answerDelayMilliseconds`: answers leave one at a time, that far apart (requests are logged on arrival).
    init(answers: [String: Answer] = [:], rejectIssuedBefore: Int64? = nil, answerDelayMilliseconds: Int? = nil) throws {
        keyFile = directory.file("AuthKey.p8")
        try P256PrivateKey.generate().pkcs8PEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory.file("log.jsonl"), contents: nil)
        let scriptPath = directory.file("script.json")
        try Self.writeScript(scriptPath, keyFile: keyFile, keyID: keyID, teamID: teamID, topic: topic, answers: answers, rejectIssuedBefore: rejectIssuedBefore,
                             answerDelayMilliseconds: answerDelayMilliseconds)
        peer = try PeerProcess(script: "apns_standin.py", arguments: ["--script", scriptPath, "--log", directory.file("log.jsonl"), "--cert-dir", directory.path],
                               directory: directory)
    }

    /// Changes the answers (the stand-in re-reads its script when it changes).
    func script(answers: [String: Answer], rejectIssuedBefore: Int64? = nil, answerDelayMilliseconds: Int? = nil) throws {
        usleep(20_000)  // a distinct mtime
        try Self.writeScript(directory.file("script.json"), keyFile: keyFile, keyID: keyID, teamID: teamID, topic: topic, answers: answers, rejectIssuedBefore: rejectIssuedBefore,
                             answerDelayMilliseconds: answerDelayMilliseconds)
    }

    private static func writeScript(_ path: String, keyFile: String, keyID: String, teamID: String, topic: String, answers: [String: Answer], rejectIssuedBefore: Int64?,
                                    answerDelayMilliseconds: Int?) throws {
        var scripted: [String: Any] = [:]
        for (token, answer) in answers {
            var entry: [String: Any] = ["status": answer.status]
            if let reason = answer.reason { entry["reason"] = reason }
            if let timestamp = answer.timestamp { entry["timestamp"] = timestamp }
            scripted[token] = entry
        }
        var object: [String: Any] = ["p8": keyFile, "key_id": keyID, "team_id": teamID, "topic": topic, "answers": scripted,
                                     "reject_iat_before": rejectIssuedBefore.map { $0 as Any } ?? NSNull(), "default": ["status": 200]]
        if let answerDelayMilliseconds { object["answer_delay_ms"] = answerDelayMilliseconds }
        let data = try JSONSerialization.data(withJSONObject: object)
        let temporary = path + ".tmp"
        try data.write(to: URL(fileURLWithPath: temporary))
        _ = rename(temporary, path)
    }

    /// The requests received so far, one dictionary each, oldest first (a line the stand-in is still writing is left
    /// for the next call).
    func received() throws -> [[String: Any]] {
        let text = try String(contentsOfFile: logFile, encoding: .utf8)
        let complete = text.hasSuffix("\n") ? Substring(text) : text[..<(text.lastIndex(of: "\n").map { text.index(after: $0) } ?? text.startIndex)]
        return try complete.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { throw TestFailure("bad log line") }
            return object
        }
    }

    /// The environment `send-wakeups` needs to push here.
    func environment(sandboxToo: Bool = true) -> [String: String] {
        var env = ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID, "APNS_TOPIC": topic,
                   "APNS_URL": url, "APNS_CA_FILE": caFile]
        if sandboxToo { env["APNS_SANDBOX_URL"] = "https://localhost:\(peer.port)" }
        return env
    }

    func stop() { peer.stop() }
}
