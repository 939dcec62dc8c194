import Foundation
import HTTPClient
import HTTPServer

/// A real Syncthing for `job-bench watch`: its own home, one folder (`bench`, no file-system watcher: changes are
/// found by the rescans the bench asks for) shared with a peer that never connects, GUI and sync on loopback only,
/// no discovery, relays or upgrades. Killed when stopped.
final class BenchSyncthing {
    let home: String
    let vault: String
    let apiKey = "bench-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    let guiPort: Int
    var url: String { "http://127.0.0.1:\(guiPort)" }
    private var process: Process?
    private let http = HTTPClient(options: HTTPClient.Options(connectTimeout: 2, totalTimeout: 10))

    init(home: String, vault: String) throws {
        self.home = home
        self.vault = vault
        try FileManager.default.createDirectory(atPath: vault + "/.stfolder", withIntermediateDirectories: true)
        let me = try Self.generate(home)
        let peer = try Self.generate(home + "-peer")
        guiPort = try Self.freePort()
        let listenPort = try Self.freePort()
        func device(_ id: String, _ address: String) -> String {
            "<device id=\"\(id)\" name=\"\" compression=\"metadata\" introducer=\"false\"><address>\(address)</address><paused>false</paused></device>"
        }
        let xml = """
            <configuration version="36">
            <folder id="bench" label="bench" path="\(vault)" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="false">
            <filesystemType>basic</filesystemType><device id="\(me)"></device><device id="\(peer)"></device>
            <minDiskFree unit="%">0</minDiskFree><paused>false</paused><markerName>.stfolder</markerName></folder>
            \(device(me, "dynamic"))
            \(device(peer, "tcp://127.0.0.1:9"))
            <gui enabled="true" tls="false" debugging="false"><address>127.0.0.1:\(guiPort)</address><apikey>\(apiKey)</apikey></gui>
            <options><listenAddress>tcp://127.0.0.1:\(listenPort)</listenAddress><globalAnnounceEnabled>false</globalAnnounceEnabled>
            <localAnnounceEnabled>false</localAnnounceEnabled><relaysEnabled>false</relaysEnabled><natEnabled>false</natEnabled>
            <startBrowser>false</startBrowser><urAccepted>-1</urAccepted><autoUpgradeIntervalH>0</autoUpgradeIntervalH>
            <crashReportingEnabled>false</crashReportingEnabled><minHomeDiskFree unit="%">0</minHomeDiskFree></options>
            </configuration>
            """
        try xml.write(toFile: home + "/config.xml", atomically: true, encoding: .utf8)
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/syncthing")
        process.arguments = ["serve", "--home=\(home)", "--no-browser", "--no-restart", "--logfile=\(home)/syncthing.log"]
        process.environment = ["HOME": home, "PATH": "/usr/bin:/bin", "STMONITORED": "yes", "STNOUPGRADE": "1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try WatchBench.waitUntil(30, "Syncthing's REST API") {
            (try? http.send(HTTPRequest(method: "GET", url: url + "/rest/system/status", headers: [("X-API-Key", apiKey)])))?.status == 200
        }
    }

    func rescan() throws {
        let response = try http.send(HTTPRequest(method: "POST", url: url + "/rest/db/scan?folder=bench", headers: [("X-API-Key", apiKey)]))
        guard response.status == 200 else { throw BenchUsageError(message: "rescan answered \(response.status)") }
    }

    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    private static func generate(_ home: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/syncthing")
        process.arguments = ["generate", "--home=\(home)", "--no-default-folder"]
        process.environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let range = output.range(of: #"([A-Z2-7]{7}-){7}[A-Z2-7]{7}"#, options: .regularExpression) else {
            throw BenchUsageError(message: "syncthing generate gave no Device ID")
        }
        return String(output[range])
    }

    private static func freePort() throws -> Int {
        let socket = try ListeningSocket.bind(host: "127.0.0.1", port: 0)
        close(socket.descriptor)
        return socket.port
    }
}
