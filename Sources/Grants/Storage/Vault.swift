import Cryptography
import Runner

/// Seals and indexes this module's secrets and identifiers at rest with the store's `StoreKeyring` (docs/design.md §4).
///
/// Each column has its own fixed purpose, so a value copied from one column into another neither opens nor matches.
package struct Vault: Sendable {
    /// The column purposes.
    package enum Purpose: String, Sendable {
        case grantSecret = "grant-secret"
        case grantID = "grant-id"
        case endpointID = "endpoint-id"
        case endpointKey = "endpoint-key"
        case ticket = "offer-ticket"
    }

    let keyring: StoreKeyring

    package init(keyring: StoreKeyring) { self.keyring = keyring }

    /// The vault over the store key of `context`.
    package init(_ context: JobContext) throws {
        do { keyring = try StoreKeyring(storeKey: try context.storeKey()) }
        catch let error as JobError { throw error }
        catch { throw JobError.configuration("store-key-invalid", "the store key cannot be used; check the store key file") }
    }

    /// Encrypts `value` for `purpose`.
    package func seal(_ value: [UInt8], _ purpose: Purpose) throws -> [UInt8] {
        do { return try keyring.seal(value, purpose: purpose.rawValue) }
        catch { throw JobError.internal("sealing a value failed") }
    }

    /// Decrypts a value sealed for `purpose`. The key was already proved to be this store's (`StoreKeyCheck`), so
    /// a value that does not open is a damaged row (65, `sealed-row-damaged`), not a wrong key.
    package func open(_ sealed: [UInt8], _ purpose: Purpose) throws -> SecretBytes {
        do { return try keyring.open(sealed, purpose: purpose.rawValue) }
        catch { throw Vault.damagedRow }
    }

    /// A sealed value that does not open under the store's own key: the row was altered or truncated.
    package static let damagedRow = JobError.badInput("sealed-row-damaged", "a sealed row in the store is damaged (it does not open, though the store key matches this store); the other rows are unaffected")

    /// True for the failure `open` reports for a damaged row.
    package static func isDamagedRow(_ error: Error) -> Bool { (error as? JobError)?.category == "sealed-row-damaged" }

    /// The keyed blind index of `value` for `purpose`, for equality lookups.
    package func index(_ value: [UInt8], _ purpose: Purpose) -> [UInt8] { keyring.blindIndex(value, purpose: purpose.rawValue) }

    /// The blind index of an endpoint id.
    package func index(_ endpoint: EndpointID) -> [UInt8] { index(endpoint.bytes, .endpointID) }

    /// Seals an endpoint id.
    package func seal(_ endpoint: EndpointID) throws -> [UInt8] { try seal(endpoint.bytes, .endpointID) }

    /// Opens a sealed endpoint id.
    package func openEndpoint(_ sealed: [UInt8]) throws -> EndpointID {
        try EndpointID(bytes: try open(sealed, .endpointID).copyBytes())
    }
}
