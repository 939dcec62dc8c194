import Runner

/// One node's view of its store for a command or a pass: the vault, the endpoint key and the tables.
package struct Node {
    package let database: Database
    package let vault: Vault
    package let identity: NodeIdentity
    package let issued: IssuedGrants
    package let held: HeldGrants
    package let contacts: Contacts
    package let blocks: BlockList

    package init(database: Database, vault: Vault, now: Int64) throws {
        self.database = database
        self.vault = vault
        identity = try NodeIdentity.loadOrCreate(database, vault: vault, now: now)
        issued = IssuedGrants(database: database, vault: vault)
        held = HeldGrants(database: database, vault: vault)
        contacts = Contacts(database: database, vault: vault)
        blocks = BlockList(database: database, vault: vault)
    }

    /// The node over `database` whose identity was already loaded (a server's connections share it).
    package init(database: Database, vault: Vault, identity: NodeIdentity) {
        self.database = database
        self.vault = vault
        self.identity = identity
        issued = IssuedGrants(database: database, vault: vault)
        held = HeldGrants(database: database, vault: vault)
        contacts = Contacts(database: database, vault: vault)
        blocks = BlockList(database: database, vault: vault)
    }

    /// The node of the store `context` opened.
    package init(_ context: JobContext) throws {
        try self.init(database: context.database, vault: try Vault(context), now: context.nowMilliseconds)
    }
}
