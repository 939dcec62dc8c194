import Runner

/// Grants (seed "device history and direct offers"): a node that remembers peers only through grants, answers them
/// over an authenticated link, holds offers for unreachable contacts, collects offers held for it, and sweeps.
///
/// Where the story lives:
/// - `Identity/` — the store's Ed25519 endpoint key (`node show`) and endpoint ids with their fingerprints.
/// - `Storage/` — the tables behind `Schema/GrantsMigrations.swift`: issued and held grants, contacts, the block
///   list, the grant bundle, and the `Vault` that seals secrets and blind-indexes identifiers.
/// - `Proof/` — the HMAC challenge–response (`GrantProof`, reference vector in the tests), the pure ordered
///   verifier (`ProofVerifier`) and `GrantChecker`, which reads the store, judges and renews.
/// - `Link/` — iroh's direct connections (QUIC v1, TLS 1.3 raw Ed25519 keys, via the `QUIC` module), ALPN, one
///   stream per exchange carrying length-prefixed JSON frames
///   (`LinkConnection`), the server (`LinkServer`, `serve-link`) and the dialer.
/// - `Offers/` — outgoing (`held_offers`) and incoming offers, limits, notifications, `offers …` and `pull-offers`.
/// - `Sweep/` — `sweep-grants`, in keyset batches; `job-bench sweep-grants` times it against plain SQL.
/// - `Commands/` — `grants …`, `block`, `unblock`, `contacts …`.
package enum GrantsModule {
    package static let module = Module(
        name: "grants",
        migrations: GrantsMigrations.all,
        jobs: [SweepGrantsJob(), PullOffersJob()],
        commands: [
            NodeShowCommand(),
            GrantsIssueCommand(), GrantsAcceptCommand(), GrantsListCommand(), GrantsRevokeCommand(),
            BlockCommand(), BlockListCommand(), UnblockCommand(),
            ContactsListCommand(), ContactsRenameCommand(), ContactsDeleteCommand(), ContactsDeleteAllCommand(),
            ServeLinkCommand(),
            OffersSendCommand(), OffersListCommand(), OffersCancelCommand(), OffersAcceptCommand(), OffersDeclineCommand(), OffersNotificationsCommand(),
        ],
        settings: GrantsSettings.all,
        sealedSamples: [SealedSample(table: "node_identity", column: "key_sealed", purpose: Vault.Purpose.endpointKey.rawValue),
                        SealedSample(table: "grants_issued", column: "grant_sealed", purpose: Vault.Purpose.grantID.rawValue)])
}
