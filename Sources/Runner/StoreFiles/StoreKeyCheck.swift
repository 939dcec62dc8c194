import Cryptography
import Store

/// Proves the store key is the one the store's secrets were sealed under.
///
/// The first use seals a fixed marker into `store_key_check`; later uses must open it. A replaced or mistyped
/// key file fails here, with a message that says so, instead of as an authentication failure deep in a job. When
/// the check row is missing but the modules' tables hold sealed values (`SealedSample`), the key must open one of
/// each before a new check row is sealed (docs/roles/relay.md, "The store key").
enum StoreKeyCheck {
    static let marker = Array("background-jobs store key check v1".utf8)
    static let purpose = "store-key-check"

    /// One sealed value from each of `samples`' tables that holds any, with its purpose; a table that cannot be
    /// read (not in this store's schema) is skipped.
    static func samples(_ samples: [SealedSample], in database: Database) -> [(sealed: [UInt8], purpose: String)] {
        samples.compactMap { sample in
            guard let value = try? database.scalar("SELECT \(sample.column) FROM \(sample.table) LIMIT 1") as [UInt8]? else { return nil }
            return (value, sample.purpose)
        }
    }

    static func verify(key: SecretBytes, database: Database, now: Int64, samples: [(sealed: [UInt8], purpose: String)] = []) throws {
        let keyring = try StoreKeyring(storeKey: key)
        for sample in samples where (try? keyring.open(sample.sealed, purpose: sample.purpose)) == nil {
            throw JobError.configuration("store-key-mismatch", "the store key does not match this store (was the key file replaced?); restore the original key")
        }
        if let sealed: [UInt8] = try database.scalar("SELECT sealed FROM store_key_check WHERE id = 1") {
            guard let opened = try? keyring.open(sealed, purpose: purpose), ConstantTime.equals(opened.copyBytes(), marker) else {
                throw JobError.configuration("store-key-mismatch", "the store key does not match this store (was the key file replaced?); restore the original key")
            }
            return
        }
        let sealed = try keyring.seal(marker, purpose: purpose)
        try database.writeIfNeeded { db in
            _ = try db.execute("INSERT INTO store_key_check (id, sealed, created_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING", [sealed, now])
        }
        // Another process may have sealed first with a different key: check what is stored now.
        if let stored: [UInt8] = try database.scalar("SELECT sealed FROM store_key_check WHERE id = 1"), stored != sealed {
            try verify(key: key, database: database, now: now)
        }
    }
}
