import Foundation
import Runner

/// The homeserver helper's preflight (vaultsync-notify's `--doctor`) as `job doctor` checks: config found,
/// the watcher's settings usable, API reachable, key valid, device id readable, the event stream opens, relay
/// health, a peer connected, a folder shared, and — only with `--send-trigger` — one real trigger.
enum HelperPreflight {
    /// The variables that say this machine runs the homeserver helper.
    static let configurationKeys = ["RELAY_URL", "SYNCTHING_API_KEY", "SYNCTHING_API_URL", "SYNCTHING_CONFIG", "STALE_RETRIGGER_SECONDS", "WATCHED_FOLDERS",
                                    "DEBOUNCE_SECONDS", "STARTUP_ANNOUNCE"]

    /// The checks as `job doctor`'s `retrigger-stale` group: it applies where any helper variable is set.
    static let group = DoctorGroup(
        name: "retrigger-stale",
        options: [.flag("--send-trigger", "also send one real wake-up trigger to the relay")],
        notConfigured: { context in
            configurationKeys.contains { context.env($0) != nil } || context.arguments.flag("--send-trigger")
                ? nil : "none of RELAY_URL or SYNCTHING_* is set"
        },
        libraries: [.curl],
        checks: checks)

    static let checks: [DoctorCheck] = [
        DoctorCheck(name: "syncthing-config") { session in
            do {
                let endpoint = try HelperConfiguration.syncthingEndpoint(session.context.environment)
                session.helper.syncthing = SyncthingClient(endpoint: endpoint)
                let source = endpoint.configPath == nil ? "from SYNCTHING_API_KEY and SYNCTHING_API_URL" : "config.xml found"
                let tls = endpoint.url.lowercased().hasPrefix("https") ? (endpoint.tls.pinnedPublicKey != nil ? ", https with the GUI certificate pinned" : ", https") : ""
                return .pass(source + tls)
            } catch let error as JobError { return .fail(error) } catch { return .fail("the Syncthing configuration cannot be read", .configuration) }
        },
        DoctorCheck(name: "relay-url") { session in
            do {
                session.helper.relayURL = try HelperConfiguration.relayURL(session.context.environment)
                _ = try HelperConfiguration.cadence(session.context.environment)
                return .pass("RELAY_URL is set")
            } catch let error as JobError { return .fail(error) } catch { return .fail("RELAY_URL cannot be used", .configuration) }
        },
        DoctorCheck(name: "watcher-settings") { session in
            do {
                let debounce = try HelperConfiguration.debounceSeconds(session.context.environment)
                let announce = try HelperConfiguration.startupAnnounce(session.context.environment)
                return .pass("watch-syncthing: debounce \(debounce) s, startup announce \(announce ? "on" : "off")")
            } catch let error as JobError { return .fail(error) } catch { return .fail("the watcher's settings cannot be used", .configuration) }
        },
        DoctorCheck(name: "syncthing-api") { session in
            guard let client = session.helper.syncthing else { return .skip("no Syncthing configuration") }
            do { _ = try client.isReachable(); return .pass("the REST API answers") } catch { return syncthingFailure(error) }
        },
        DoctorCheck(name: "syncthing-key") { session in
            guard let client = session.helper.syncthing else { return .skip("no Syncthing configuration") }
            do {
                _ = try client.devices()
                session.helper.keyAccepted = true
                return .pass("the API key is accepted")
            } catch { return syncthingFailure(error) }
        },
        DoctorCheck(name: "device-id") { session in
            guard let client = session.helper.syncthing, session.helper.keyAccepted else { return .skip("the API key was not accepted") }
            do {
                session.helper.myID = try client.myID()
                return .pass("this Syncthing's Device ID is readable")
            } catch { return syncthingFailure(error) }
        },
        DoctorCheck(name: "device-key") { session in
            guard let myID = session.helper.myID else { return .skip("the Device ID is unknown") }
            let configPath = try? HelperConfiguration.syncthingEndpoint(session.context.environment).configPath
            let pinned = (try? TriggerSender.PinState.load(session.context.database))?.acceptedAt != nil
            switch DeviceKeyFiles.load(configPath: configPath ?? nil, myID: myID) {
            case .success(let key):
                return .pass("triggers are authenticated (v2): cert.pem and key.pem are readable (\(key.certificate.keyType.rawValue))")
            case .failure(let unusable):
                if pinned { return .fail("this helper is pinned to authenticated triggers, but " + unusable.explanation, .configuration) }
                return .warn("triggers are sent unauthenticated (v1): " + unusable.explanation)
            }
        },
        DoctorCheck(name: "relay-v2") { session in
            guard let state = try? TriggerSender.PinState.load(session.context.database) else { return .skip("the helper's state cannot be read") }
            if state.acceptedAt != nil && state.unsupportedAt == nil { return .pass("the relay accepted this helper's authenticated trigger") }
            if state.unsupportedAt != nil {
                return .warn("the relay answered the authenticated trigger route with 404/405: it predates v2, so v1 is sent (v2 is retried each cadence)")
            }
            return .pass("no authenticated trigger sent yet")
        },
        DoctorCheck(name: "event-stream") { session in
            guard let client = session.helper.syncthing, session.helper.keyAccepted else { return .skip("the API key was not accepted") }
            do {
                _ = try client.events(since: 0, timeout: 0)
                return .pass("Syncthing's event stream can be opened (what watch-syncthing listens to)")
            } catch { return syncthingFailure(error) }
        },
        DoctorCheck(name: "relay-health") { session in
            guard let url = session.helper.relayURL else { return .skip("no usable RELAY_URL") }
            return RelayClient(baseURL: url, caFile: session.context.env("RELAY_CA_FILE")).isHealthy()
                ? .pass("the relay answers {\"status\":\"ok\"}")
                : .fail("the relay's /api/v1/health did not answer {\"status\":\"ok\"}", .unavailable)
        },
        DoctorCheck(name: "peer-connected") { session in
            guard let client = session.helper.syncthing, let myID = session.helper.myID else { return .skip("the Device ID is unknown") }
            do {
                let connected = try client.connectedDevices().subtracting([myID])
                return connected.isEmpty ? .fail("no remote device is connected to this Syncthing", .unavailable) : .pass("\(connected.count) remote device(s) connected")
            } catch { return syncthingFailure(error) }
        },
        DoctorCheck(name: "folder-shared") { session in
            guard let client = session.helper.syncthing, let myID = session.helper.myID else { return .skip("the Device ID is unknown") }
            do {
                let watched = HelperConfiguration.watchedFolders(session.context.environment)
                let shared = try client.folders().filter { folder in
                    !folder.paused && folder.devices.contains { $0 != myID } && (watched == nil || watched!.contains(folder.id))
                }
                return shared.isEmpty ? .fail("no unpaused (watched) folder is shared with a remote device", .configuration) : .pass("\(shared.count) folder(s) shared")
            } catch { return syncthingFailure(error) }
        },
        DoctorCheck(name: "trigger") { session in
            guard session.context.arguments.flag("--send-trigger") else { return .skip("not sent (use --send-trigger)") }
            guard let url = session.helper.relayURL, let myID = session.helper.myID else { return .skip("needs RELAY_URL and the Device ID") }
            let configPath = try? HelperConfiguration.syncthingEndpoint(session.context.environment).configPath
            let cadence = (try? HelperConfiguration.cadence(session.context.environment)) ?? HelperConfiguration.defaultCadenceSeconds
            let sender = TriggerSender(relay: RelayClient(baseURL: url, caFile: session.context.env("RELAY_CA_FILE")),
                                       configPath: configPath ?? nil, cadenceSeconds: cadence, database: session.context.database)
            let sent: TriggerSender.Sent
            do { sent = try sender.send(deviceID: myID, now: session.context.now, logger: session.context.logger, attempt: 1) } catch let error as JobError {
                return .fail(error)
            } catch { return .fail("the helper's state cannot be stored", .configuration) }
            let (answer, status) = (sent.answer, sent.status)
            switch answer {
            case .sent: return .pass("the relay accepted the \(sent.authenticated ? "authenticated (v2)" : "v1") trigger (202)")
            case .subscriptionInactive: return .fail("the relay answered \(status ?? 0): no active subscription for this Device ID", .unavailable)
            case .notFound: return .fail("the relay answered 404: RELAY_URL is wrong", .configuration)
            case .rateLimited: return .fail("the relay answered 429: rate limited, try later", .unavailable)
            case .transient: return .fail(status.map { "the relay answered \($0)" } ?? "the relay could not be reached", .unavailable)
            }
        },
    ]
}

/// A Syncthing call's failure as a doctor outcome.
private func syncthingFailure(_ error: any Error) -> DoctorOutcome {
    guard let failure = error as? SyncthingClient.Failure else { return .fail("Syncthing's REST API failed", .unavailable) }
    return .fail(failure.jobError)
}

/// What the helper's checks found, for the checks after them.
final class HelperDoctorState {
    var syncthing: SyncthingClient?
    var relayURL: String?
    var myID: String?
    var keyAccepted = false
}

extension DoctorSession {
    /// The helper checks' shared state.
    var helper: HelperDoctorState { state(HelperDoctorState.init) }
}
