/// The store's at-rest protection: seals secrets per column purpose and computes keyed blind indexes.
///
/// From the 32-byte store key, HKDF-SHA256 derives two independent keys with distinct info labels:
/// an AES-256-GCM sealing key and an HMAC-SHA256 blind-index key (docs/design.md §4). The `purpose`
/// (e.g. `"grant-secret"`) is bound into both, so a ciphertext or index copied into another
/// column does not open or match there.
package final class StoreKeyring: Sendable {
    /// Required store key length in bytes.
    package static let storeKeyCount = 32

    private static let sealingInfo = Array("BackgroundJobs store v1: AES-256-GCM sealing key".utf8)
    private static let indexInfo = Array("BackgroundJobs store v1: HMAC-SHA256 blind-index key".utf8)

    private let sealingKey: SecretBytes
    private let indexKey: SecretBytes

    /// Derives the sealing and blind-index keys from `storeKey`, which must be 32 bytes.
    package init(storeKey: SecretBytes) throws {
        guard storeKey.count == Self.storeKeyCount else { throw CryptoError.invalidKey("the store key must be 32 bytes") }
        sealingKey = try HKDF.deriveKey(inputKey: storeKey, salt: [], info: Self.sealingInfo, outputCount: AESGCM.keyCount)
        indexKey = try HKDF.deriveKey(inputKey: storeKey, salt: [], info: Self.indexInfo, outputCount: 32)
    }

    /// Encrypts `plaintext` for the column named by `purpose`; returns nonce ‖ ciphertext ‖ tag.
    package func seal(_ plaintext: [UInt8], purpose: String) throws -> [UInt8] {
        try AESGCM.seal(plaintext, key: sealingKey, associatedData: Self.label(purpose))
    }

    /// Decrypts a value sealed for `purpose`; throws `CryptoError.authenticationFailed` if it was
    /// altered, sealed for another purpose, or sealed under another store key.
    package func open(_ sealed: [UInt8], purpose: String) throws -> SecretBytes {
        SecretBytes(try AESGCM.open(sealed, key: sealingKey, associatedData: Self.label(purpose)))
    }

    /// The deterministic 32-byte blind index of `value` for `purpose`: HMAC-SHA256(indexKey, purpose ‖ 0x00 ‖ value).
    ///
    /// Equal values give equal indexes within one purpose and store key, so equality lookups work
    /// without storing the value; without the key the index reveals nothing about the value.
    package func blindIndex(_ value: [UInt8], purpose: String) -> [UInt8] {
        HMACSHA256.authenticate(key: indexKey, message: Self.label(purpose) + [0x00] + value)
    }

    /// The purpose as bytes. A purpose is a fixed column name chosen by code: empty or NUL-containing
    /// purposes would make the `purpose ‖ 0x00 ‖ value` framing ambiguous, so they are programming errors.
    private static func label(_ purpose: String) -> [UInt8] {
        let bytes = Array(purpose.utf8)
        precondition(!bytes.isEmpty && !bytes.contains(0), "a StoreKeyring purpose must be non-empty and contain no NUL")
        return bytes
    }
}
