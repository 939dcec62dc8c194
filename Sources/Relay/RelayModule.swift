import Runner

/// The cloud relay's server side (docs/protocols/relay-api.md): silent-push delivery and invalid-token cleanup, with the admin
/// commands that feed them.
///
/// `SendWakeupsJob` and `CleanTokensJob` run over `Registry` and `APNsClient`. The relay's HTTP front door
/// (`serve-relay`, `RelayAPI`, entitlements and rate limits) is in `API/`, offline StoreKit verification in `StoreKit/`.
/// The homeserver helper (`retrigger-stale`) is the `Homeserver` module; the two share only the wire types in `RelayWire`.
package enum RelayModule {
    package static let module = Module(
        name: "relay",
        migrations: RelayMigrations.all + RelayAPIMigrations.all,
        postgresMigrations: RelayPostgresMigrations.all,
        jobs: [SendWakeupsJob(), CleanTokensJob()],
        commands: [RelayRegisterCommand(), RelayUnregisterCommand(), RelayTriggerCommand(), RelayShowCommand(), RelayUnpinCommand(), ServeRelayCommand()],
        doctor: [APNsPreflight.group, StoreKitPreflight.group],
        sealedSamples: [SealedSample(table: "relay_tokens", column: "token_sealed", purpose: Registry.tokenPurpose)])
}
