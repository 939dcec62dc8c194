import Runner

/// One node's view of its store for a command or a pass: the vault, the endpoint key and the tables.
public struct Node {
    public let database: Database
    public let vault: Vault
    public let identity: NodeIdentity
    public let issued: IssuedGrants
    public let held: HeldGrants
    public let contacts: Contacts
    public let blocks: BlockList

    public init(database: Database, vault: Vault, now: Int64) throws {
        self.database = database
        self.vault = vault
        identity = try NodeIdentity.loadOrCreate(database, vault: vault, now: now)
        issued = IssuedGrants(database: database, vault: vault)
        held = HeldGrants(database: database, vault: vault)
        contacts = Contacts(database: database, vault: vault)
        blocks = BlockList(database: database, vault: vault)
    }

    /// The node over `database` whose identity was already loaded (a server's connections share it).
    public init(database: Database, vault: Vault, identity: NodeIdentity) {
        self.database = database
        self.vault = vault
        self.identity = identity
        issued = IssuedGrants(database: database, vault: vault)
        held = HeldGrants(database: database, vault: vault)
        contacts = Contacts(database: database, vault: vault)
        blocks = BlockList(database: database, vault: vault)
    }

    /// The node of the store `context` opened.
    public init(_ context: JobContext) throws {
        try self.init(database: context.database, vault: try Vault(context), now: context.nowMilliseconds)
    }
}
