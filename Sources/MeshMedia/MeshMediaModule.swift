import Runner

/// Private media on an emulated BLE mesh (seed: private-media-migration).
///
/// - `Wire/`: byte-compatible codecs shared with the bitchat iOS and Android clients; every decoder is total.
/// - `Noise/`: `Noise_XX_25519_ChaChaPoly_SHA256` over OpenSSL 3 EVP with bitchat's transport framing.
/// - `Node/`: the node over its store — identity, identity cache and pins, sessions, the send rules
///   (`SendDecision`, `OutboxPlanner`), the receive rules (`InboxProcessor`), and the 0x09 alias criterion.
/// - `Commands/`, `Jobs/`: `job mesh …` and the passes `media-outbox`, `media-inbox`, `media-alias-check`.
///
/// The radio is emulated by the store: a node's frames go to its `mesh_outbox`, and
/// `job --store A mesh exchange --to B` carries them to B's `mesh_inbox` (see `MeshExchangeCommand`). A node
/// between two others relays what is not addressed to it (TTL − 1), so `A → R → C` is two exchanges.
///
/// A private file from A to B, end to end:
///
///     job --store A mesh init            job --store B mesh init
///     job --store A mesh announce        job --store B mesh announce
///     job --store A mesh exchange --to B; job --store B mesh exchange --to A
///     job --store A media-inbox          job --store B media-inbox        # verified announces, no pins yet
///     job --store A mesh send-file --to <B's peer id> report.pdf
///     job --store A media-outbox         # B advertised privateMedia: wait for proof, start a Noise handshake
///     … exchange / media-inbox on both sides (message 2, message 3, each side's 0x21 peer state) …
///     job --store A media-outbox         # B proved privateMedia in this session: encrypted 0x20, fragmented
///     job --store A mesh exchange --to B; job --store B media-inbox   # → B.media/<media id>
///
/// Without B's proof, A may send the signed legacy `fileTransfer` only to an unpinned B and only when that
/// very send carried `--accept-unencrypted`; a pinned B that stops proving privateMedia is blocked (downgrade).
/// `job mesh sends` shows each send's form or the reason it failed.
package enum MeshMediaModule {
    /// The module's passes, by name (panic wipe clears their history).
    static let jobNames = [MediaOutboxJob().name, MediaInboxJob().name, MediaAliasCheckJob().name]

    package static let module = Module(
        name: "MeshMedia",
        migrations: MeshSchema.migrations,
        jobs: [MediaOutboxJob(), MediaInboxJob(), MediaAliasCheckJob()],
        commands: [
            MeshInitCommand(), MeshAnnounceCommand(), MeshPeersCommand(), MeshExchangeCommand(),
            MeshSendFileCommand(), MeshSendsCommand(), MeshPanicWipeCommand(),
            MeshFilesListCommand(), MeshFilesExportCommand(), MeshFilesDeleteCommand(),
            MeshShowCommand(), MeshSendsCancelCommand(), MeshSendsRetryCommand(), MeshSendsWithdrawConsentCommand(),
            MeshBuildsAddCommand(), MeshBuildsListCommand(), MeshPolicySetCommand(),
        ],
        settings: [
            .integer("mesh.proof-timeout-seconds", default: 5, in: 1...3600,
                     "how long a send waits for a privateMedia peer's session proof before the no-proof rule applies (counted on a live link: the handshake must also have stalled for two outbox passes)"),
            .integer("mesh.announce-interval-seconds", default: 300, in: 30...86_400,
                     "how often media-outbox announces the node (nickname, keys, capabilities) when no announce went out meanwhile"),
        ] + MeshRetention.settings,
        upkeep: [MeshUpkeep.storeUpkeep],
        sealedSamples: [SealedSample(table: "mesh_node", column: "sealed_noise_private", purpose: NodeIdentity.noisePurpose)])
}
