import Foundation
import HTTPClient
import RelayWire
import Runner

/// The few Syncthing REST calls the helper makes (`X-API-Key`, JSON answers), with failures mapped to
/// fixed categories: unreachable, key refused, unexpected answer.
struct SyncthingClient {
    struct Device: Equatable { var id: String; var paused: Bool }
    struct Folder: Equatable { var id: String; var paused: Bool; var devices: [String] }
    struct Completion: Equatable {
        var needItems: Int64
        var needBytes: Int64
        var needDeletes: Int64
        var isBehind: Bool { needItems > 0 || needBytes > 0 || needDeletes > 0 }
    }

    enum Failure: Error, Equatable {
        /// No HTTP answer (connection refused, TLS or pin failure, timeout).
        case unreachable(HTTPError.TransportKind?)
        /// A TLS failure on an `https://` GUI with no `https-cert.pem` to pin: the self-signed certificate was
        /// checked against the system's roots, and the fix is the missing file, not a changed certificate.
        case certificateFileMissing
        /// 403: the API key is wrong (1.19 answers "CSRF Error"), or the host check refused us.
        case keyRefused
        case unexpectedStatus(Int)
        case malformedAnswer

        var jobError: JobError {
            switch self {
            case .unreachable(let kind):
                return kind == .tls
                    ? JobError.unavailable("syncthing-tls", "Syncthing's TLS certificate does not match the pinned https-cert.pem")
                    : JobError.unavailable("syncthing-unreachable", "Syncthing's REST API cannot be reached; is Syncthing running?")
            case .certificateFileMissing:
                return JobError.unavailable("syncthing-tls", "Syncthing's GUI is on HTTPS but its certificate file https-cert.pem is missing beside config.xml, so its self-signed certificate cannot be pinned")
            case .keyRefused: return JobError.configuration("syncthing-key-refused", "Syncthing refused the API key (403); check SYNCTHING_API_KEY or config.xml")
            case .unexpectedStatus: return JobError.unavailable("syncthing-answer", "Syncthing's REST API gave an unexpected status")
            case .malformedAnswer: return JobError.unavailable("syncthing-answer", "Syncthing's REST API gave an answer that could not be read")
            }
        }
    }

    let endpoint: HelperConfiguration.SyncthingEndpoint
    let http: HTTPClient
    /// For the event long-poll: its total timeout leaves room for the poll's own.
    let eventsHTTP: HTTPClient
    /// How long one `/rest/events` long-poll waits for an event (seconds).
    static let eventPollSeconds = 30

    init(endpoint: HelperConfiguration.SyncthingEndpoint) {
        self.endpoint = endpoint
        http = HTTPClient(options: HTTPClient.Options(connectTimeout: 5, totalTimeout: 20, maxResponseBodyBytes: 4 << 20, tls: endpoint.tls))
        eventsHTTP = HTTPClient(options: HTTPClient.Options(connectTimeout: 5, totalTimeout: Double(Self.eventPollSeconds + 15),
                                                            maxResponseBodyBytes: 16 << 20, tls: endpoint.tls))
    }

    private func get(_ path: String, authenticated: Bool = true, client: HTTPClient? = nil) throws(Failure) -> (status: Int, body: Any?) {
        let headers: [(name: String, value: String)] = authenticated ? [("X-API-Key", endpoint.apiKey)] : []
        let response: HTTPResponse
        do { response = try (client ?? http).send(HTTPRequest(method: "GET", url: endpoint.url + path, headers: headers)) } catch {
            throw unreachable(error)
        }
        if response.status == 403 { throw .keyRefused }
        return (response.status, Self.parse(response.body))
    }

    private func getOK(_ path: String) throws(Failure) -> Any {
        let (status, body) = try get(path)
        guard status == 200 else { throw .unexpectedStatus(status) }
        guard let body else { throw .malformedAnswer }
        return body
    }

    /// True when anything answers HTTP at the API URL (any status: 1.19 has no unauthenticated health
    /// route, so the key is checked separately by `myID`).
    func isReachable() throws(Failure) -> Bool {
        do {
            _ = try http.send(HTTPRequest(method: "GET", url: endpoint.url + "/rest/system/ping"))
            return true
        } catch {
            throw unreachable(error)
        }
    }

    /// A transfer's failure: a TLS failure without a pinned certificate says the certificate file is missing.
    private func unreachable(_ error: HTTPError) -> Failure {
        let kind = error.transportKind
        return kind == .tls && endpoint.tls.pinnedPublicKey == nil ? .certificateFileMissing : .unreachable(kind)
    }

    /// `/rest/system/status` → `myID`.
    func myID() throws(Failure) -> String { try Self.myID(try getOK("/rest/system/status")) }

    /// `/rest/system/status` → `myID`, and `startTime` and `uptime` (seconds), which tell a restart (nil if absent).
    func status() throws(Failure) -> (myID: String, startTime: String?, uptime: Int64?) {
        let body = try getOK("/rest/system/status")
        let object = body as? [String: Any]
        return (try Self.myID(body), object?["startTime"] as? String, (object?["uptime"] as? NSNumber)?.int64Value)
    }

    /// One `/rest/events` long-poll for the watcher's event types after event `since`, waiting up to `timeout`
    /// seconds for one (0: answer at once).
    func events(since: Int64, timeout: Int) throws(Failure) -> [SyncthingEvent] {
        let types = SyncthingEvent.subscribedTypes.joined(separator: ",")
        let (status, body) = try get("/rest/events?events=\(types)&since=\(since)&timeout=\(timeout)", client: eventsHTTP)
        guard status == 200 else { throw .unexpectedStatus(status) }
        guard let events = SyncthingEvent.decode(body) else { throw .malformedAnswer }
        return events
    }

    /// `/rest/config/devices` (includes the local device).
    func devices() throws(Failure) -> [Device] { try Self.devices(try getOK("/rest/config/devices")) }

    /// `/rest/config/folders` with the devices each is shared with.
    func folders() throws(Failure) -> [Folder] { try Self.folders(try getOK("/rest/config/folders")) }

    /// `/rest/db/completion?device=D&folder=F`; nil when Syncthing answers 404 (folder paused or not running).
    func completion(device: String, folder: String) throws(Failure) -> Completion? {
        let (status, body) = try get("/rest/db/completion?device=\(Self.query(device))&folder=\(Self.query(folder))")
        if status == 404 { return nil }
        guard status == 200 else { throw .unexpectedStatus(status) }
        return try Self.completion(body)
    }

    /// `/rest/system/connections`: the remote devices connected now.
    func connectedDevices() throws(Failure) -> Set<String> { try Self.connectedDevices(try getOK("/rest/system/connections")) }

    // MARK: The answers' decoders, pure over the parsed body (fuzzed through `RelayFuzzing`).

    /// A JSON answer body, or nil when it is not JSON.
    static func parse(_ body: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
    }

    static func myID(_ body: Any?) throws(Failure) -> String {
        guard let id = (body as? [String: Any])?["myID"] as? String, SyncthingDeviceID.canonical(id) != nil else { throw .malformedAnswer }
        return id
    }

    static func devices(_ body: Any?) throws(Failure) -> [Device] {
        guard let list = body as? [[String: Any]] else { throw .malformedAnswer }
        return try list.map { (entry) throws(Failure) -> Device in
            guard let id = entry["deviceID"] as? String else { throw .malformedAnswer }
            return Device(id: id, paused: entry["paused"] as? Bool ?? false)
        }
    }

    static func folders(_ body: Any?) throws(Failure) -> [Folder] {
        guard let list = body as? [[String: Any]] else { throw .malformedAnswer }
        return try list.map { (entry) throws(Failure) -> Folder in
            guard let id = entry["id"] as? String else { throw .malformedAnswer }
            let devices = (entry["devices"] as? [[String: Any]] ?? []).compactMap { $0["deviceID"] as? String }
            return Folder(id: id, paused: entry["paused"] as? Bool ?? false, devices: devices)
        }
    }

    static func completion(_ body: Any?) throws(Failure) -> Completion {
        guard let object = body as? [String: Any] else { throw .malformedAnswer }
        func number(_ key: String) throws(Failure) -> Int64 {
            guard let value = object[key] as? NSNumber else { throw .malformedAnswer }
            return value.int64Value
        }
        return Completion(needItems: try number("needItems"), needBytes: try number("needBytes"), needDeletes: try number("needDeletes"))
    }

    static func connectedDevices(_ body: Any?) throws(Failure) -> Set<String> {
        guard let object = body as? [String: Any], let connections = object["connections"] as? [String: Any] else { throw .malformedAnswer }
        return Set(connections.compactMap { key, value in ((value as? [String: Any])?["connected"] as? Bool) == true ? key : nil })
    }

    static func query(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
