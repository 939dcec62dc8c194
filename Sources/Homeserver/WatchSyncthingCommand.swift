import Foundation
import Runner

/// `job watch-syncthing`: the homeserver helper's change-driven path, long-running beside Syncthing.
///
/// Reads this Syncthing's Device ID (retrying with back-off while Syncthing is not up; a 4xx other than 429 is a
/// configuration error, 78), checks the relay's health (a 404 is 78), subscribes to Syncthing's event stream,
/// reports `READY=1` to systemd, sends the startup announce (`STARTUP_ANNOUNCE`), then wakes the relay one
/// `DEBOUNCE_SECONDS` after the last change of a burst (`ChangeFilter`, `TriggerSchedule`). The relay's answers
/// are handled by `TriggerSender` exactly as `retrigger-stale` handles them, except that the watcher keeps running
/// on 400–403 and asks again after a minute. SIGTERM or SIGINT: a pending wake-up is sent at once (within 5 s),
/// then exit 0.
struct WatchSyncthingCommand: Command {
    let path = ["watch-syncthing"]
    let libraries: [LazyLibrary] = [.curl]
    let summary = "wake the relay on every Syncthing change (long-running; systemd's watch-syncthing.service)"
    var environmentKeys: [(name: String, help: String)] { HelperConfiguration.environmentKeys + HelperConfiguration.watcherEnvironmentKeys }
    let discussion = """
        The change-driven path of the homeserver helper; retrigger-stale is its slow backup sweep, and skips while
        the watcher holds a wake-up back or sent one within STALE_RETRIGGER_SECONDS. Reads RELAY_URL, RELAY_CA_FILE,
        SYNCTHING_API_KEY, SYNCTHING_API_URL, SYNCTHING_CONFIG and WATCHED_FOLDERS as retrigger-stale does, plus
        DEBOUNCE_SECONDS (default 5, at least 1) and STARTUP_ANNOUNCE (default on). Only LocalIndexUpdated and
        FolderCompletion (while the peer still needs data) wake the relay; paused folders and devices never do.
        Under systemd (Type=notify) it reports READY=1 once subscribed and pings the watchdog. Metrics go to
        JOB_METRICS_DIR/watch-syncthing.prom. Exit: 0 after SIGTERM, 78 on a configuration error or a relay 404.
        """

    func run(_ context: JobContext) throws {
        let env = context.environment
        let relayURL = try HelperConfiguration.relayURL(env)
        let cadence = try HelperConfiguration.cadence(env)
        let debounce = try HelperConfiguration.debounceSeconds(env)
        let announce = try HelperConfiguration.startupAnnounce(env)
        let endpoint = try HelperConfiguration.syncthingEndpoint(env)
        StopSignals.listen()
        let watcher = ChangeWatcher(context: context, syncthing: SyncthingClient(endpoint: endpoint), configPath: endpoint.configPath, relayURL: relayURL, cadenceSeconds: cadence,
                                    debounceSeconds: debounce, announce: announce, watched: HelperConfiguration.watchedFolders(env),
                                    notifier: SystemdNotifier(environment: env))
        try watcher.run()
    }
}
