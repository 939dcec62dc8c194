import Runner

/// The hard block list (`blocked_endpoints`): a blocked endpoint is answered exactly like an unknown grant.
package struct BlockList {
    let database: Database
    let vault: Vault

    package init(database: Database, vault: Vault) {
        self.database = database
        self.vault = vault
    }

    /// Whether `endpoint` is blocked.
    package func contains(_ endpoint: EndpointID) throws -> Bool {
        (try database.scalar("SELECT count(*) FROM blocked_endpoints WHERE endpoint_index = ?", [vault.index(endpoint)]) as Int?) ?? 0 > 0
    }

    /// Blocks `endpoint`; returns false when it already was.
    @discardableResult
    package func block(_ endpoint: EndpointID, now: Int64) throws -> Bool {
        try database.writeIfNeeded { db in
            try db.execute("INSERT OR IGNORE INTO blocked_endpoints (endpoint_index, endpoint_sealed, created_at) VALUES (?, ?, ?)",
                           [vault.index(endpoint), try vault.seal(endpoint), now]) > 0
        }
    }

    /// Every blocked endpoint with when it was blocked, oldest first.
    package func all() throws -> [(endpoint: EndpointID, createdAt: Int64)] {
        try database.query("SELECT endpoint_sealed, created_at FROM blocked_endpoints ORDER BY created_at, rowid").map { row in
            (try vault.openEndpoint(try row.get(0)), try row.get(1))
        }
    }

    /// Unblocks `endpoint`; returns false when it was not blocked.
    @discardableResult
    package func unblock(_ endpoint: EndpointID) throws -> Bool {
        try database.writeIfNeeded { db in try db.execute("DELETE FROM blocked_endpoints WHERE endpoint_index = ?", [vault.index(endpoint)]) > 0 }
    }
}
