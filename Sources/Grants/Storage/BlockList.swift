import Runner

/// The hard block list (`blocked_endpoints`): a blocked endpoint is answered exactly like an unknown grant.
public struct BlockList {
    let database: Database
    let vault: Vault

    public init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    /// Whether `endpoint` is blocked.
    public func contains(_ endpoint: EndpointID) throws -> Bool {
        (try database.scalar("SELECT count(*) FROM blocked_endpoints WHERE endpoint_index = ?", [vault.index(endpoint)]) as Int?) ?? 0 > 0
    }

    /// Blocks `endpoint`; returns false when it already was.
    @discardableResult
    public func block(_ endpoint: EndpointID, now: Int64) throws -> Bool {
        try database.writeIfNeeded { db in
            try db.execute("INSERT OR IGNORE INTO blocked_endpoints (endpoint_index, endpoint_sealed, created_at) VALUES (?, ?, ?)",
                           [vault.index(endpoint), try vault.seal(endpoint), now]) > 0
        }
    }

    /// Every blocked endpoint with when it was blocked, oldest first.
    public func all() throws -> [(endpoint: EndpointID, createdAt: Int64)] {
        try database.query("SELECT endpoint_sealed, created_at FROM blocked_endpoints ORDER BY created_at, rowid").map { row in
            (try vault.openEndpoint(try row.get(0)), try row.get(1))
        }
    }

    /// Unblocks `endpoint`; returns false when it was not blocked.
    @discardableResult
    public func unblock(_ endpoint: EndpointID) throws -> Bool {
        try database.writeIfNeeded { db in try db.execute("DELETE FROM blocked_endpoints WHERE endpoint_index = ?", [vault.index(endpoint)]) > 0 }
    }
}
