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
/// `job --store A mesh exchange --to B` carries them to B's `mesh_inbox` (see `MeshExchangeCommand`).
public enum MeshMediaModule {
    public static let module = Module(
        name: "MeshMedia",
        migrations: MeshSchema.migrations,
        jobs: [MediaOutboxJob(), MediaInboxJob(), MediaAliasCheckJob()],
        commands: [
            MeshInitCommand(), MeshAnnounceCommand(), MeshPeersCommand(), MeshExchangeCommand(),
            MeshSendFileCommand(), MeshSendsCommand(), MeshPanicWipeCommand(),
            MeshBuildsAddCommand(), MeshBuildsListCommand(), MeshPolicySetCommand(),
        ],
        settings: [
            .integer("mesh.proof-timeout-seconds", default: 5, in: 1...3600,
                     "how long a send waits for a privateMedia peer's session proof before the no-proof rule applies"),
        ])
}
