import Foundation

/// The relay stand-in (`Tests/Peers/relay_standin.py`): scripted trigger answers, a log of what arrived.
package final class RelayStandIn {
    package let directory = TemporaryDirectory("relay")
    package let peer: PeerProcess
    package var url: String { "http://127.0.0.1:\(peer.port)" }

    package struct Answer {
        package var status: Int
        package var headers: [String: String] = [:]

        package init(status: Int, headers: [String: String] = [:]) {
            self.status = status
            self.headers = headers
        }
    }

    package init(trigger: [Answer] = [Answer(status: 202)], healthStatus: Int = 200, healthBody: [String: Any] = ["status": "ok", "version": "1.3.2"]) throws {
        _ = FileManager.default.createFile(atPath: directory.file("log.jsonl"), contents: nil)
        try Self.write(directory.file("script.json"), trigger: trigger, healthStatus: healthStatus, healthBody: healthBody)
        peer = try PeerProcess(script: "relay_standin.py", arguments: ["--script", directory.file("script.json"), "--log", directory.file("log.jsonl")], directory: directory)
    }

    /// Rescripts the answers (the next trigger gets the first of them).
    package func script(trigger: [Answer], healthStatus: Int = 200, healthBody: [String: Any] = ["status": "ok", "version": "1.3.2"]) throws {
        try Self.write(directory.file("script.json"), trigger: trigger, healthStatus: healthStatus, healthBody: healthBody)
    }

    private static func write(_ path: String, trigger: [Answer], healthStatus: Int, healthBody: [String: Any]) throws {
        let object: [String: Any] = ["trigger": trigger.map { ["status": $0.status, "headers": $0.headers] },
                                     "health": ["status": healthStatus, "body": healthBody]]
        let data = try JSONSerialization.data(withJSONObject: object)
        usleep(20_000)  // a distinct mtime for the stand-in to notice
        try data.write(to: URL(fileURLWithPath: path + ".tmp"))
        _ = rename(path + ".tmp", path)
    }

    /// Requests received so far.
    package func received() throws -> [[String: Any]] {
        try String(contentsOfFile: directory.file("log.jsonl"), encoding: .utf8).split(separator: "\n").map {
            guard let object = try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] else { throw TestFailure("bad log line") }
            return object
        }
    }

    package var triggers: [[String: Any]] { ((try? received()) ?? []).filter { $0["path"] as? String == "/api/v1/trigger" } }

    package func stop() { peer.stop() }
}
