import Runner

/// The background New Activity JWT pool (docs/protocols/jwt-pool.md): identities, minting, the pool commands, and the prefetch
/// that plays the native fetcher.
///
/// The story, file by file:
/// - `PoolCalendar`, `DayWindow`, `PoolPlan`: epoch days, the day window `[opening − slack, closing + slack]`,
///   and the slot rule `day % size` with the covered range `firstDay ..< firstDay + size` (pure).
/// - `DayTokenClaims`, `DayTokenMinter`: the exact bytes did-jwt's `createJWT` writes — header
///   `{"typ":"JWT","alg":"ES256K"}`, payload `{"iat","exp","nbf","iss"}` — signed ES256K (pure).
/// - `DayTokenInspection`, `PoolVerifier`: a token read back as Endorser reads it, and `pool verify`'s replay of
///   the native selector over every covered day and one cycle beyond (pure).
/// - `IdentityStore`, `PoolStore`, `FetchLog`, `TokenPoolMigrations`: the tables. Keys and tokens are sealed with
///   `StoreKeyring`; a pool is a generation (`staging` → `live` → `retired`) swapped live in one transaction.
/// - `PoolMinting` + `MintPoolJob` (`mint-pool`); `PrefetchRequest`, `EndorserClient` + `PrefetchJob` (`prefetch`).
/// - `IdentityCommands`, `PoolCommands`: `job identity …` and `job pool …`; `PoolDoctor`: `job doctor`'s `token-pool` group.
/// - Settings (`TokenPoolSettings`): `pool.size`, `pool.slack-seconds`, `prefetch.plan-ids`, `prefetch.after-id`;
///   environment: `ENDORSER_URL`.
package enum TokenPoolModule {
    package static let module = Module(
        name: "TokenPool",
        migrations: TokenPoolMigrations.all,
        jobs: [MintPoolJob(), PrefetchJob()],
        commands: [
            IdentityImportCommand(), IdentityNewCommand(), IdentityAddPeerCommand(), IdentityListCommand(),
            IdentityUseCommand(), IdentityRemoveCommand(), IdentityExportCommand(),
            PoolShowCommand(), PoolExportCommand(), PoolVerifyCommand(), PoolClearCommand(), ActivityListCommand(),
        ],
        settings: TokenPoolSettings.all,
        doctor: [PoolDoctor.group],
        sealedSamples: [SealedSample(table: "token_pool_identities", column: "sealed_private_key", purpose: IdentityStore.keyPurpose)])
}
