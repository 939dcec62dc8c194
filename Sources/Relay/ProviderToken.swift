import Cryptography
import Foundation
import Runner
import Store

/// The APNs provider token: an ES256 JWT (`{"alg":"ES256","kid":…}` / `{"iss":…,"iat":…}`), cached sealed in
/// the store and reused across passes.
///
/// Apple refuses a token older than an hour (`ExpiredProviderToken`) and one refreshed more often than every
/// 20 minutes (`TooManyProviderTokenUpdates`): the cache is reused for 50 minutes, and even a forced re-mint
/// (after `ExpiredProviderToken`) waits until the cached token is 20 minutes old.
enum ProviderToken {
    static let reuseMilliseconds: Int64 = 50 * 60_000
    static let minimumAgeBeforeRemintMilliseconds: Int64 = 20 * 60_000
    static let purpose = "relay.apns-provider-jwt"

    /// Whether to keep the cached token or mint a new one.
    enum Decision: Equatable { case reuse, mint, keepUntilRemintAllowed }

    /// Pure policy. `cachedMintedAt` is nil when there is no usable cached token (none, other key, unreadable);
    /// `rejectedAsExpired` when APNs just answered `ExpiredProviderToken` to the cached token.
    static func decide(cachedMintedAt: Int64?, now: Int64, rejectedAsExpired: Bool = false) -> Decision {
        guard let minted = cachedMintedAt else { return .mint }
        let age = now - minted
        if age < 0 { return .mint }  // minted "in the future" (clock moved back): its iat would be refused
        if rejectedAsExpired { return age >= minimumAgeBeforeRemintMilliseconds ? .mint : .keepUntilRemintAllowed }
        return age < reuseMilliseconds ? .reuse : .mint
    }

    /// Signs a provider JWT issued at `issuedAt` (Unix seconds).
    static func mint(_ config: APNsConfiguration, issuedAt: Int64) throws -> String {
        let header = "{\"alg\":\"ES256\",\"kid\":\(JSON.quote(config.keyID))}"
        let claims = "{\"iss\":\(JSON.quote(config.teamID)),\"iat\":\(issuedAt)}"
        return try JWT.encode(headerJSON: Array(header.utf8), payloadJSON: Array(claims.utf8)) { try config.key.signature(for: $0) }
    }

    /// The cached token and its mint time when it was made with this configuration's key.
    static func cached(_ db: Database, config: APNsConfiguration, keyring: StoreKeyring) throws -> (jwt: String, mintedAt: Int64)? {
        guard let row = try db.queryOne("SELECT key_fingerprint, jwt_sealed, minted_at FROM relay_provider_token WHERE id = 1") else { return nil }
        let fingerprint: [UInt8] = try row.get(0)
        guard ConstantTime.equals(fingerprint, config.fingerprint(keyring)) else { return nil }
        guard let opened = try? keyring.open(try row.get(1, as: [UInt8].self), purpose: purpose) else { return nil }
        return (String(decoding: opened.copyBytes(), as: UTF8.self), try row.get(2))
    }

    /// The token to use now: the cached one, or a newly minted one stored in the cache (unless `store` is false).
    static func current(_ db: Database, config: APNsConfiguration, keyring: StoreKeyring, now: Int64, rejectedAsExpired: Bool = false,
                        store: Bool = true) throws -> (jwt: String, mintedAt: Int64, minted: Bool) {
        let cached = try cached(db, config: config, keyring: keyring)
        switch decide(cachedMintedAt: cached?.mintedAt, now: now, rejectedAsExpired: rejectedAsExpired) {
        case .reuse, .keepUntilRemintAllowed:
            return (cached!.jwt, cached!.mintedAt, false)
        case .mint:
            let jwt = try mint(config, issuedAt: now / 1000)
            if store {
                let sealed = try keyring.seal(Array(jwt.utf8), purpose: purpose)
                try db.write { db in
                    try db.execute("""
                        INSERT INTO relay_provider_token (id, key_fingerprint, jwt_sealed, minted_at) VALUES (1, ?, ?, ?)
                        ON CONFLICT (id) DO UPDATE SET key_fingerprint = excluded.key_fingerprint, jwt_sealed = excluded.jwt_sealed, minted_at = excluded.minted_at
                        """, [config.fingerprint(keyring), sealed, now])
                }
            }
            return (jwt, now, true)
        }
    }
}
