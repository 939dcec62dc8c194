import Runner

/// The module's failures, each with its documented exit code and a message free of identifiers and secrets.
enum TokenPoolErrors {
    /// No identity configured (78): nothing can be minted or fetched.
    static let noIdentity = JobError.configuration("no-identity", "no identity is configured; run 'job identity import' (key hex on stdin) or 'job identity new'")

    /// The app's `BackgroundJwtUnsupportedIdentityError` (65; docs/protocols/jwt-pool.md §4): a did:peer (passkey) identity cannot mint a pool.
    static let unsupportedIdentity = JobError.badInput("unsupported-identity", "the active identity is a passkey (did:peer) identity, which cannot mint background tokens; the pool was left unchanged")

    /// The sealed key does not open under this store key, or does not match its DID (65).
    static let identityKeyUnreadable = JobError.badInput("identity-key-unreadable", "the active identity's sealed key does not open with this store key or does not match its DID; re-import the identity")

    /// No identity with the DID given.
    static let unknownIdentity = JobError.badInput("unknown-identity", "no identity with that DID is stored; see 'job identity list'")

    /// A live pool's token does not open in its row (65): the store key was checked, so the row was moved from
    /// another slot, day, pool or identity, or altered. Nothing is sent or printed.
    static let poolDamaged = JobError.badInput("pool-unreadable", "the live pool is damaged: a sealed token does not open in its slot (moved from another row or altered); run 'job pool verify' to see which, then mint-pool to replace the pool")

    /// The live pool was sealed by an older version, without binding tokens to their slots (65): it is not used;
    /// the next mint-pool replaces it.
    static let poolLegacy = JobError.badInput("pool-legacy", "the live pool was sealed by an older version without binding each token to its slot, so it is not used; run mint-pool to replace it")

    /// `ENDORSER_URL` is not set (78).
    static let endorserURLMissing = JobError.configuration("endorser-url-missing", "ENDORSER_URL is not set; set it to the Endorser server's base URL")

    /// `ENDORSER_URL` is plain http:// to a host other than loopback (78): the Bearer token would cross the network in clear.
    static let endorserURLInsecure = JobError.configuration("endorser-url-insecure", "ENDORSER_URL is plain http:// to a host that is not loopback, so the Bearer token would go out in clear; use https://")

    /// A pool identity is active but no token covers today (78): nothing was sent; run mint-pool.
    static let noCredential = JobError.configuration("no-credential", "no pool token covers today, so nothing was sent; run mint-pool (see 'job pool show')")

    /// `ENDORSER_URL` is not an http(s) URL (78).
    static let endorserURLInvalid = JobError.configuration("endorser-url-invalid", "ENDORSER_URL is not an http:// or https:// URL")
}
