import Cryptography
import Foundation

/// A pool token read back and checked the way Endorser checks a Bearer token (did-jwt `verifyJWT`, no audience).
///
/// Parsing is strict (three base64url segments, strict JSON, `alg` exactly `ES256K`), the signer is found by
/// recovering the public key from the signature and comparing its Ethereum address with the issuer DID's, and
/// the claims must be exactly `iat`, `exp`, `nbf`, `iss` — in particular no `aud`.
package struct DayTokenInspection: Sendable {
    /// Endorser's clock tolerance (did-jwt's default skew), seconds.
    package static let endorserSkewSeconds: Int64 = 300

    package let issuedAt: Int64
    package let notBefore: Int64
    package let expires: Int64
    package let issuer: String

    /// Why a token could not be read or was not made by the expected identity: fixed phrases, no token content.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed
        case wrongHeader
        case wrongClaims
        case wrongIssuer
        case badSignature

        package var description: String {
            switch self {
            case .malformed: return "token is not a well-formed compact JWT"
            case .wrongHeader: return "header is not {\"typ\":\"JWT\",\"alg\":\"ES256K\"}"
            case .wrongClaims: return "payload is not did-jwt's {\"iat\",\"exp\",\"nbf\",\"iss\"} form"
            case .wrongIssuer: return "issuer is not the active identity"
            case .badSignature: return "signature does not recover to the issuer's address"
            }
        }
    }

    /// Reads `token` and checks that `expectedIssuer` (a `did:ethr:0x…` DID) signed it.
    package init(token: String, expectedIssuer: String) throws(Failure) {
        let parsed: ParsedJWT
        do { parsed = try JWT.parse(token) } catch { throw .malformed }
        guard parsed.headerJSON == DayTokenClaims.headerJSON else { throw .wrongHeader }
        guard let object = try? JSONSerialization.jsonObject(with: Data(parsed.payloadJSON)) as? [String: Any],
              Set(object.keys) == ["iat", "exp", "nbf", "iss"],
              let iat = Self.integer(object["iat"]), let exp = Self.integer(object["exp"]), let nbf = Self.integer(object["nbf"]),
              let iss = object["iss"] as? String else { throw .wrongClaims }
        // did-jwt's exact bytes: anything else (another key order, spaces, floats, booleans) is not a pool token.
        let window = DayWindow(day: PoolCalendar.epochDay(unixSeconds: nbf), notBefore: nbf, expires: exp)
        guard DayTokenClaims.payloadJSON(issuedAt: iat, window: window, issuer: iss) == parsed.payloadJSON else { throw .wrongClaims }
        guard iss == expectedIssuer, let address = DIDEthr.address(fromDID: iss) else { throw .wrongIssuer }
        do { try JWT.verifyES256K(parsed, didEthrAddress: address) } catch { throw .badSignature }
        issuedAt = iat
        notBefore = nbf
        expires = exp
        issuer = iss
    }

    /// Whether Endorser accepts the token at `unixSeconds`: not `nbf > now + skew`, not `exp <= now − skew`.
    package func isAcceptedByEndorser(atUnixSeconds now: Int64) -> Bool {
        !(notBefore > now + Self.endorserSkewSeconds) && !(expires <= now - Self.endorserSkewSeconds)
    }

    /// Whether Endorser would accept the token at any instant of `day`.
    package func isAcceptedByEndorser(anywhereIn day: Int64) -> Bool {
        // Accepted on [nbf − skew, exp + skew); the day is [opening, closing).
        notBefore - Self.endorserSkewSeconds < PoolCalendar.closing(of: day)
            && expires + Self.endorserSkewSeconds > PoolCalendar.opening(of: day)
    }

    /// An integral JSON number (the canonical-bytes check afterwards rejects booleans and fractions).
    private static func integer(_ value: Any?) -> Int64? {
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        guard double.isFinite, double.rounded() == double, abs(double) < 9_007_199_254_740_992 else { return nil }
        return number.int64Value
    }
}
