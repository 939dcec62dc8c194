import Runner

/// The homeserver helper (what the public `vaultsync-notify` helper does; docs/roles/homeserver.md): it runs beside Syncthing and wakes the relay when a
/// remote device has something to fetch.
///
/// `WatchSyncthingCommand` (`watch-syncthing`, `ChangeWatcher` over `EventStream`) is the change-driven path, and
/// `RetriggerStaleJob` the stale-peer sweep (over `SyncthingClient`, `StalePeerCheck` and `RelayClient`);
/// `HelperConfiguration` reads the environment and Syncthing's config.xml (`SyncthingConfigFile`), and
/// `HelperPreflight` is the helper's preflight as `job doctor`'s `retrigger-stale` group. The helper shares only the
/// relay API's wire types (`RelayWire`) with the relay server. Its tables are `HomeserverMigrations`.
package enum HomeserverModule {
    package static let module = Module(
        name: "homeserver",
        migrations: HomeserverMigrations.all,
        jobs: [RetriggerStaleJob()],
        commands: [WatchSyncthingCommand(), HomeserverStatusCommand()],
        doctor: [HelperPreflight.group])
}
