import Cryptography

/// How a pool's tokens are sealed at rest: AES-256-GCM under the store key, with associated data that binds each
/// token to its identity (DID), its pool generation (a random 16-byte seal context stored with the generation),
/// its slot and its day. A sealed token moved to another row — another slot or day of the same pool, another
/// pool, another identity — does not open there.
///
/// Pools minted before this binding have no seal context (`legacy`): they are never opened for use (prefetch and
/// export refuse them with a clear message) and the next `mint-pool` replaces them; `pool verify` still reads
/// them, without the binding, to report what they hold, and fails them.
package enum PoolSealing {
    /// Bytes of a generation's seal context.
    package static let contextCount = 16

    /// Why a slot's token could not be opened.
    package enum Failure: Error, Equatable {
        /// The pool was sealed without the slot binding (an older version); re-mint it.
        case legacy
        /// The token does not open in this row: it was moved from another row or altered.
        case damaged(slot: Int)
    }

    /// A fresh seal context for a new generation.
    package static func newContext() throws -> [UInt8] { try SecureRandom.bytes(count: contextCount) }

    /// The keyring purpose (the AES-GCM associated data) of one slot.
    static func purpose(did: String, context: [UInt8], slot: Int, day: Int64) -> String {
        "token-pool-jwt v2|pool=\(Hex.encode(context))|did=\(did)|slot=\(slot)|day=\(day)"
    }

    /// Seals `token` for `slot`/`day` of the generation with `context`, minted by `did`.
    static func seal(_ token: [UInt8], did: String, context: [UInt8], slot: Int, day: Int64, keyring: StoreKeyring) throws -> [UInt8] {
        try keyring.seal(token, purpose: purpose(did: did, context: context, slot: slot, day: day))
    }

    /// Opens the token of `record`, a row of the live pool `pool`.
    static func open(_ record: PoolStore.SlotRecord, of pool: PoolStore.LivePool, keyring: StoreKeyring) throws(Failure) -> String {
        guard let context = pool.sealContext else { throw .legacy }
        do {
            let bytes = try keyring.open(record.sealedToken, purpose: purpose(did: pool.did, context: context, slot: record.slot, day: record.window.day))
            return String(decoding: bytes.copyBytes(), as: UTF8.self)
        } catch {
            throw .damaged(slot: record.slot)
        }
    }

    /// Opens a legacy pool's token without the binding — only for `pool verify`'s report, never for use.
    static func openLegacyForInspection(_ record: PoolStore.SlotRecord, keyring: StoreKeyring) -> String? {
        (try? keyring.open(record.sealedToken, purpose: PoolStore.tokenPurpose)).map { String(decoding: $0.copyBytes(), as: UTF8.self) }
    }
}
