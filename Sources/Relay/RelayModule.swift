import Runner

/// Seed 001 (cloud relay): the homeserver helper's stale-peer retrigger, and the relay's silent-push
/// delivery and invalid-token cleanup, with the admin commands that feed them.
///
/// The whole story lives in this folder: `RetriggerStaleJob` (homeserver side, over `SyncthingClient` and
/// `RelayClient`), `SendWakeupsJob` and `CleanTokensJob` (relay side, over `Registry` and `APNsClient`),
/// and `HelperPreflight` (the helper's preflight as `job doctor`'s `retrigger-stale` group). The relay's HTTP front door
/// (`serve-relay`, `RelayAPI`, entitlements and rate limits) is in `API/`, offline StoreKit verification in `StoreKit/`.
public enum RelayModule {
    public static let module = Module(
        name: "relay",
        migrations: RelayMigrations.all + RelayAPIMigrations.all,
        postgresMigrations: RelayPostgresMigrations.all,
        jobs: [RetriggerStaleJob(), SendWakeupsJob(), CleanTokensJob()],
        commands: [RelayRegisterCommand(), RelayUnregisterCommand(), RelayTriggerCommand(), RelayShowCommand(), RelayUnpinCommand(), ServeRelayCommand()],
        doctor: [HelperPreflight.group, APNsPreflight.group, StoreKitPreflight.group])
}
