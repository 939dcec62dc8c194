/// The exact header and payload bytes did-jwt's `createJWT` writes for a pool token (reference "Token bytes").
///
/// did-jwt builds the payload as `{ iat, exp, ...payload, iss }` and serializes it with `JSON.stringify`:
/// keys in that insertion order, no spaces, integers in plain decimal, times in seconds. The pool passes
/// `nbf` in the payload and the issuer as an option, so the bytes are
/// `{"iat":…,"exp":…,"nbf":…,"iss":"did:ethr:0x…"}`. There is no `aud`: Endorser verifies without an
/// audience, and did-jwt then refuses a token that carries one.
package enum DayTokenClaims {
    /// `{"typ":"JWT","alg":"ES256K"}`, the header `createJWT` writes for an ES256K signer.
    package static let headerJSON: [UInt8] = Array(#"{"typ":"JWT","alg":"ES256K"}"#.utf8)

    /// The payload bytes for `window`, issued at `issuedAt` (Unix seconds) by `issuer`.
    ///
    /// `issuer` is a `did:ethr:0x…` DID: ASCII letters, digits and colons only, so it needs no JSON escaping
    /// (`IdentityDID` guarantees the form before anything is minted).
    package static func payloadJSON(issuedAt: Int64, window: DayWindow, issuer: String) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(80 + issuer.utf8.count)
        out += Array(#"{"iat":"#.utf8) + Array(String(issuedAt).utf8)
        out += Array(#","exp":"#.utf8) + Array(String(window.expires).utf8)
        out += Array(#","nbf":"#.utf8) + Array(String(window.notBefore).utf8)
        out += Array(#","iss":""#.utf8) + Array(issuer.utf8) + Array(#""}"#.utf8)
        return out
    }
}
