import Foundation
import HTTPClient

/// A real Syncthing (Debian's `syncthing` 1.19) on loopback with its own home: generated keys, a written
/// config (known API key, GUI and listen ports, no discovery/relays/NAT/reporting/upgrades), run with
/// `STMONITORED=yes` so the pid held is the real process, and killed when stopped or released.
package final class SyncthingInstance {
    package static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/syncthing") }

    package let home: String
    package let deviceID: String
    package let apiKey: String
    package let guiPort: Int
    package let listenPort: Int
    package let tls: Bool
    private var process: Process?
    package var guiURL: String { "\(tls ? "https" : "http")://127.0.0.1:\(guiPort)" }
    package var configPath: String { home + "/config.xml" }

    package struct Peer {
        package var deviceID: String
        package var listenPort: Int
        package init(deviceID: String, listenPort: Int) { self.deviceID = deviceID; self.listenPort = listenPort }
    }
    package struct Folder {
        package var id: String
        package var path: String
        package var devices: [String]
        package init(id: String, path: String, devices: [String]) { self.id = id; self.path = path; self.devices = devices }
    }

    package init(home: String, tls: Bool = false) throws {
        self.home = home
        self.tls = tls
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let generate = Process()
        generate.executableURL = URL(fileURLWithPath: "/usr/bin/syncthing")
        generate.arguments = ["generate", "--home=\(home)", "--no-default-folder"]
        generate.environment = ["HOME": home, "PATH": "/usr/bin:/bin"]
        let pipe = Pipe()
        generate.standardOutput = pipe
        generate.standardError = pipe
        try generate.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        generate.waitUntilExit()
        guard let range = output.range(of: #"Device ID: ([A-Z2-7]{7}-){7}[A-Z2-7]{7}"#, options: .regularExpression) else {
            throw TestFailure("syncthing generate gave no device id: \(output)")
        }
        deviceID = String(output[range].dropFirst("Device ID: ".count))
        apiKey = "test-key-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        guiPort = unusedPort()
        listenPort = unusedPort()
    }

    /// Writes config.xml: this device, `peers`, `folders`.
    package func configure(peers: [Peer], folders: [Folder]) throws {
        func device(_ id: String, _ address: String) -> String {
            """
                <device id="\(id)" name="" compression="metadata" introducer="false" skipIntroductionRemovals="false" introducedBy="">
                    <address>\(address)</address>
                    <paused>false</paused>
                    <autoAcceptFolders>false</autoAcceptFolders>
                </device>
            """
        }
        var xml = "<configuration version=\"36\">\n"
        for folder in folders {
            try FileManager.default.createDirectory(atPath: folder.path + "/.stfolder", withIntermediateDirectories: true)
            xml += """
                <folder id="\(folder.id)" label="\(folder.id)" path="\(folder.path)" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="false" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
                    <filesystemType>basic</filesystemType>
            \(([deviceID] + folder.devices).map { "        <device id=\"\($0)\" introducedBy=\"\"></device>" }.joined(separator: "\n"))
                    <minDiskFree unit="%">0</minDiskFree>
                    <paused>false</paused>
                    <markerName>.stfolder</markerName>
                </folder>

            """
        }
        xml += device(deviceID, "dynamic") + "\n"
        for peer in peers { xml += device(peer.deviceID, "tcp://127.0.0.1:\(peer.listenPort)") + "\n" }
        xml += """
                <gui enabled="true" tls="\(tls)" debugging="false">
                    <address>127.0.0.1:\(guiPort)</address>
                    <apikey>\(apiKey)</apikey>
                    <theme>default</theme>
                </gui>
                <options>
                    <listenAddress>tcp://127.0.0.1:\(listenPort)</listenAddress>
                    <globalAnnounceEnabled>false</globalAnnounceEnabled>
                    <localAnnounceEnabled>false</localAnnounceEnabled>
                    <relaysEnabled>false</relaysEnabled>
                    <natEnabled>false</natEnabled>
                    <reconnectionIntervalS>1</reconnectionIntervalS>
                    <startBrowser>false</startBrowser>
                    <urAccepted>-1</urAccepted>
                    <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
                    <crashReportingEnabled>false</crashReportingEnabled>
                    <minHomeDiskFree unit="%">0</minHomeDiskFree>
                    <progressUpdateIntervalS>1</progressUpdateIntervalS>
                    <setLowPriority>false</setLowPriority>
                </options>
            </configuration>

            """
        try xml.write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// Starts `syncthing serve` and waits until its REST API answers.
    package func start(timeout: TimeInterval = 30) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/syncthing")
        process.arguments = ["serve", "--home=\(home)", "--no-browser", "--no-restart", "--logfile=\(home)/syncthing.log"]
        process.environment = ["HOME": home, "PATH": "/usr/bin:/bin", "STMONITORED": "yes", "STNOUPGRADE": "1", "STNODEFAULTFOLDER": "1"]
        _ = FileManager.default.createFile(atPath: home + "/stderr.txt", contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: home + "/stderr.txt"))
        process.standardOutput = output
        process.standardError = output
        try process.run()
        self.process = process
        try wait(timeout: timeout, "REST API") { try self.get("/rest/system/status")["myID"] as? String == self.deviceID }
    }

    /// Kills the instance (SIGKILL: its home is temporary, and a test process may hand its children a
    /// blocked SIGTERM) and reaps it.
    package func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }

    /// The end of syncthing's log, for failure messages.
    package var logTail: String {
        let text = ((try? String(contentsOfFile: home + "/syncthing.log", encoding: .utf8)) ?? "(no log)")
            + ((try? String(contentsOfFile: home + "/stderr.txt", encoding: .utf8)) ?? "")
        return String(text.suffix(1500))
    }

    // MARK: REST helpers for the tests (pinned like the helper does when tls is on)

    private var client: HTTPClient {
        let tlsOptions = tls ? TLSOptions.pinnedKeyOnly(.certificateFile(path: home + "/https-cert.pem")) : TLSOptions()
        return HTTPClient(options: HTTPClient.Options(connectTimeout: 2, totalTimeout: 10, tls: tlsOptions))
    }

    package func request(_ method: String, _ path: String, body: Any? = nil) throws -> (Int, Any?) {
        let data = try body.map { try JSONSerialization.data(withJSONObject: $0) }.map { [UInt8]($0) }
        let response = try client.send(HTTPRequest(method: method, url: guiURL + path, headers: [("X-API-Key", apiKey), ("Content-Type", "application/json")], body: data))
        return (response.status, try? JSONSerialization.jsonObject(with: Data(response.body), options: [.fragmentsAllowed]))
    }

    package func get(_ path: String) throws -> [String: Any] {
        let (status, body) = try request("GET", path)
        guard status == 200, let object = body as? [String: Any] else { throw TestFailure("GET \(path) → \(status)") }
        return object
    }

    package func completion(of device: String, folder: String) throws -> [String: Any] {
        try get("/rest/db/completion?device=\(device)&folder=\(folder)")
    }

    package func isConnected(to device: String) throws -> Bool {
        ((try get("/rest/system/connections")["connections"] as? [String: Any])?[device] as? [String: Any])?["connected"] as? Bool == true
    }

    package func setFolder(_ id: String, paused: Bool) throws {
        let (status, _) = try request("PATCH", "/rest/config/folders/\(id)", body: ["paused": paused])
        guard status == 200 else { throw TestFailure("pausing folder → \(status)") }
    }

    package func setDevice(_ id: String, paused: Bool) throws {
        let (status, _) = try request("PATCH", "/rest/config/devices/\(id)", body: ["paused": paused])
        guard status == 200 else { throw TestFailure("pausing device → \(status)") }
    }

    package func rescan(_ folder: String) throws {
        let (status, _) = try request("POST", "/rest/db/scan?folder=\(folder)")
        guard status == 200 else { throw TestFailure("rescan → \(status)") }
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` passes (each poll is a REST call or a file check,
    /// cheap next to the up to 200 ms a longer interval adds to every start and every wait for a sync).
    package func wait(timeout: TimeInterval, _ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? condition()) == true { return }
            if let process, !process.isRunning { throw TestFailure("syncthing exited (\(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus)) while waiting for \(what): \(logTail)") }
            usleep(50_000)
        }
        throw TestFailure("timed out after \(timeout) s waiting for \(what)")
    }
}
