import Foundation
import HTTPClient
import Runner

/// The homeserver helper's configuration, from the same environment variables as vaultsync-notify.
///
/// `RELAY_URL` is required (no default: the helper never wakes a relay nobody chose). The Syncthing API
/// key and URL come from `SYNCTHING_API_KEY` / `SYNCTHING_API_URL` when set, else from `config.xml`
/// (found as `SyncthingConfigFile` says). With `tls="true"` the GUI's self-signed `https-cert.pem` beside
/// config.xml is pinned — verification is never turned off. Errors are configuration errors (78) naming
/// the variable or file, never its value.
struct HelperConfiguration {
    static let environmentKeys: [(name: String, help: String)] = [
        ("RELAY_URL", "the relay's base URL (required, no default)"),
        ("RELAY_CA_FILE", "extra CA bundle (PEM) for a relay with a private certificate (staging, tests)"),
        ("SYNCTHING_API_KEY", "Syncthing REST API key (default: from config.xml)"),
        ("SYNCTHING_API_URL", "Syncthing REST base URL (default: from config.xml)"),
        ("SYNCTHING_CONFIG", "path of Syncthing's config.xml when not in a standard location"),
        ("STALE_RETRIGGER_SECONDS", "cadence of stale-peer wake-ups (default 21600; 0 disables)"),
        ("WATCHED_FOLDERS", "comma-separated folder IDs to check (default: all)"),
    ]
    /// What `watch-syncthing` reads besides the sweep's variables.
    static let watcherEnvironmentKeys: [(name: String, help: String)] = [
        ("DEBOUNCE_SECONDS", "seconds after the last change before one wake-up is sent (default 5, at least 1)"),
        ("STARTUP_ANNOUNCE", "send one wake-up when it starts (default on; 0/false/no/off, 1/true/yes/on)"),
    ]
    static let defaultCadenceSeconds = 21_600
    static let defaultDebounceSeconds = 5.0

    /// Where Syncthing's REST API is and how to trust it.
    struct SyncthingEndpoint {
        var url: String
        var apiKey: String
        var tls: TLSOptions
        /// The config.xml read, if one was.
        var configPath: String?
    }

    let relayURL: String
    let syncthing: SyncthingEndpoint
    let cadenceSeconds: Int
    let watchedFolders: Set<String>?

    init(environment env: [String: String]) throws {
        relayURL = try Self.relayURL(env)
        cadenceSeconds = try Self.cadence(env)
        watchedFolders = Self.watchedFolders(env)
        syncthing = try Self.syncthingEndpoint(env)
    }

    static func value(_ env: [String: String], _ key: String) -> String? {
        guard let text = env[key]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }

    static func relayURL(_ env: [String: String]) throws -> String {
        guard var text = value(env, "RELAY_URL") else { throw JobError.configuration("relay-url", "RELAY_URL is not set (it has no default)") }
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil,
              url.query == nil, url.fragment == nil else {
            throw JobError.configuration("relay-url", "RELAY_URL is not an http(s) URL")
        }
        return text
    }

    static func cadence(_ env: [String: String]) throws -> Int {
        guard let text = value(env, "STALE_RETRIGGER_SECONDS") else { return defaultCadenceSeconds }
        guard let seconds = Int(text), seconds >= 0, seconds <= 366 * 86_400 else {
            throw JobError.configuration("stale-retrigger-seconds", "STALE_RETRIGGER_SECONDS must be a whole number of seconds (0 disables)")
        }
        return seconds
    }

    /// `DEBOUNCE_SECONDS`: a number of seconds, at least 1 and at most a day (default 5).
    static func debounceSeconds(_ env: [String: String]) throws -> Double {
        guard let text = value(env, "DEBOUNCE_SECONDS") else { return defaultDebounceSeconds }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 1, seconds <= 86_400 else {
            throw JobError.configuration("debounce-seconds", "DEBOUNCE_SECONDS must be a number of seconds from 1 to 86400")
        }
        return seconds
    }

    /// `STARTUP_ANNOUNCE`: on unless 0/false/no/off (default on).
    static func startupAnnounce(_ env: [String: String]) throws -> Bool {
        guard let text = value(env, "STARTUP_ANNOUNCE")?.lowercased() else { return true }
        if ["1", "true", "yes", "on"].contains(text) { return true }
        if ["0", "false", "no", "off"].contains(text) { return false }
        throw JobError.configuration("startup-announce", "STARTUP_ANNOUNCE must be one of 0/false/no/off or 1/true/yes/on")
    }

    static func watchedFolders(_ env: [String: String]) -> Set<String>? {
        guard let text = value(env, "WATCHED_FOLDERS") else { return nil }
        let ids = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return ids.isEmpty ? nil : Set(ids)
    }

    static func syncthingEndpoint(_ env: [String: String]) throws -> SyncthingEndpoint {
        let envKey = value(env, "SYNCTHING_API_KEY")
        let envURL = value(env, "SYNCTHING_API_URL")
        let configPath: String?
        do {
            configPath = try SyncthingConfigFile.locate(environment: env)
        } catch {
            throw JobError.configuration("syncthing-config", "SYNCTHING_CONFIG names no readable config.xml")
        }
        var gui: SyncthingConfigFile.GUI?
        if let configPath, envKey == nil || envURL == nil {
            guard let data = FileManager.default.contents(atPath: configPath) else {
                throw JobError.configuration("syncthing-config", "Syncthing's config.xml cannot be read; run as the user owning it")
            }
            guard let parsed = SyncthingConfigFile.parseGUI(data) else {
                throw JobError.configuration("syncthing-config", "Syncthing's config.xml has no readable <gui> section")
            }
            gui = parsed
        }
        guard let apiKey = envKey ?? gui.flatMap({ $0.apiKey.isEmpty ? nil : $0.apiKey }) else {
            throw JobError.configuration("syncthing-api-key", configPath == nil
                ? "no Syncthing config.xml found and SYNCTHING_API_KEY is not set; set SYNCTHING_CONFIG or SYNCTHING_API_KEY"
                : "Syncthing's config.xml holds no API key; set SYNCTHING_API_KEY")
        }
        var url: String
        if var text = envURL {
            while text.hasSuffix("/") { text.removeLast() }
            guard let parsed = URL(string: text), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host != nil else {
                throw JobError.configuration("syncthing-api-url", "SYNCTHING_API_URL is not an http(s) URL")
            }
            url = text
        } else if let gui {
            guard gui.enabled else { throw JobError.configuration("syncthing-gui-disabled", "Syncthing's GUI (and with it the REST API) is disabled in config.xml") }
            do { url = try SyncthingConfigFile.inferURL(address: gui.address, tls: gui.tls) } catch {
                throw JobError.configuration("syncthing-address", error == .unixSocket
                    ? "Syncthing's GUI listens on a unix socket, which this helper cannot use over TCP; set SYNCTHING_API_URL"
                    : "Syncthing's GUI address in config.xml is malformed; set SYNCTHING_API_URL")
            }
        } else {
            url = "http://127.0.0.1:8384"
        }
        // https: pin the GUI certificate beside config.xml when there is one (Syncthing's is self-signed and
        // issued to the host name, not 127.0.0.1); otherwise verify normally.
        var tls = TLSOptions()
        if url.lowercased().hasPrefix("https://"), let configPath {
            let certificate = (configPath as NSString).deletingLastPathComponent + "/https-cert.pem"
            if FileManager.default.isReadableFile(atPath: certificate) {
                tls = .pinnedKeyOnly(.certificateFile(path: certificate))
            }
        }
        return SyncthingEndpoint(url: url, apiKey: apiKey, tls: tls, configPath: configPath)
    }
}
