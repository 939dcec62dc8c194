import Runner

/// Seed 002, the Background New Activity JWT pool: identities, minting, the pool commands, and the prefetch
/// that plays the native fetcher.
public enum TokenPoolModule {
    public static let module = Module(
        name: "TokenPool",
        migrations: TokenPoolMigrations.all,
        jobs: [MintPoolJob(), PrefetchJob()],
        commands: [
            IdentityImportCommand(), IdentityNewCommand(), IdentityAddPeerCommand(), IdentityListCommand(),
            IdentityUseCommand(), IdentityExportCommand(),
            PoolShowCommand(), PoolExportCommand(), PoolVerifyCommand(), PoolClearCommand(),
        ],
        settings: TokenPoolSettings.all)
}
