import Runner

/// Grants (seed "device history and direct offers"): node identity, grants and their proofs, contacts, the block
/// list, offers over the authenticated link, and the `sweep-grants` / `pull-offers` jobs.
public enum GrantsModule {
    public static let module = Module(
        name: "grants",
        migrations: GrantsMigrations.all,
        jobs: [SweepGrantsJob(), PullOffersJob()],
        commands: [
            NodeShowCommand(),
            GrantsIssueCommand(), GrantsAcceptCommand(), GrantsListCommand(), GrantsRevokeCommand(),
            BlockCommand(), UnblockCommand(),
            ContactsListCommand(), ContactsRenameCommand(), ContactsDeleteCommand(), ContactsDeleteAllCommand(),
            ServeLinkCommand(),
            OffersSendCommand(), OffersListCommand(), OffersCancelCommand(), OffersAcceptCommand(), OffersDeclineCommand(),
        ],
        settings: GrantsSettings.all)
}
