/// A compact JWS/JWT split into its parts, before any signature check.
package struct ParsedJWT: Sendable, Equatable {
    /// The decoded header JSON bytes.
    package let headerJSON: [UInt8]
    /// The decoded payload JSON bytes (exactly as signed; the caller decodes the claims).
    package let payloadJSON: [UInt8]
    /// The decoded signature bytes.
    package let signature: [UInt8]
    /// The ASCII bytes `base64url(header) "." base64url(payload)` the signature covers.
    package let signingInput: [UInt8]
    /// The header's `alg`, as written.
    package let alg: String
}

/// Compact JWS/JWT encoding from exact JSON bytes, strict parsing, and verification for ES256K and ES256.
///
/// Encoding never re-serializes JSON: the caller's bytes are signed as given, so key order and
/// spelling match other implementations byte for byte. Each verifier accepts exactly one `alg`
/// (its allow-list is that algorithm), and `none` is always refused.
package enum JWT {
    /// Longest token `parse` accepts, in bytes.
    package static let maximumTokenLength = 16 * 1024

    /// `base64url(header) "." base64url(payload) "." base64url(sign(signingInput))`.
    package static func encode(headerJSON: [UInt8], payloadJSON: [UInt8], sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let signingInput = Base64URL.encodeToASCII(headerJSON) + [UInt8(ascii: ".")] + Base64URL.encodeToASCII(payloadJSON)
        let signature = try sign(signingInput)
        return String(decoding: signingInput + [UInt8(ascii: ".")] + Base64URL.encodeToASCII(signature), as: UTF8.self)
    }

    /// Encodes and signs with `signer`, first checking that the header's `alg` names the signer's algorithm.
    package static func encode(headerJSON: [UInt8], payloadJSON: [UInt8], signer: JWTSigner) throws -> String {
        guard try StrictJSON.topLevelStrings(headerJSON)["alg"] == signer.algorithm else {
            throw CryptoError.malformedInput("the header's alg does not name the signer's algorithm")
        }
        return try encode(headerJSON: headerJSON, payloadJSON: payloadJSON, sign: signer.sign)
    }

    /// Splits and decodes a compact token without checking its signature.
    ///
    /// Refuses tokens over `maximumTokenLength`, anything but three segments, segments that are not
    /// strict unpadded base64url, a header or payload that is not a strict JSON object, a header
    /// without a string `alg`, and headers with `crit` (no extensions are understood here).
    package static func parse(_ token: String) throws -> ParsedJWT {
        let bytes = Array(token.utf8)
        guard bytes.count <= maximumTokenLength else { throw CryptoError.malformedInput("token is longer than 16 KiB") }
        let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw CryptoError.malformedInput("a JWT has three dot-separated segments") }
        let headerJSON = try Base64URL.decode(ascii: segments[0])
        let payloadJSON = try Base64URL.decode(ascii: segments[1])
        let signature = try Base64URL.decode(ascii: segments[2])
        let header = try StrictJSON.topLevelStrings(headerJSON)
        _ = try StrictJSON.topLevelStrings(payloadJSON)
        guard let alg = header["alg"] else { throw CryptoError.malformedInput("JWT header has no string alg") }
        guard !(try StrictJSON.hasMember("crit", headerJSON)) else {
            throw CryptoError.malformedInput("JWT header has critical extensions")
        }
        return ParsedJWT(
            headerJSON: headerJSON, payloadJSON: payloadJSON, signature: signature,
            signingInput: Array(segments[0]) + [UInt8(ascii: ".")] + Array(segments[1]), alg: alg)
    }

    /// Checks an ES256K token the way Endorser (did-jwt) does for a `did:ethr` issuer: a public key
    /// recovered from the 64-byte signature over SHA-256(signing input) must have `didEthrAddress`.
    ///
    /// Throws `CryptoError.disallowedAlgorithm` unless `alg` is exactly `ES256K`, and
    /// `CryptoError.invalidSignature` if no recovered key matches. Claims (iss, exp…) are the caller's.
    package static func verifyES256K(_ token: ParsedJWT, didEthrAddress: [UInt8]) throws {
        try requireAlgorithm(token, "ES256K")
        guard didEthrAddress.count == 20 else { throw CryptoError.invalidKey("a did:ethr address is 20 bytes") }
        guard token.signature.count == 64 else { throw CryptoError.invalidSignature }
        let digest = SHA256.hash(token.signingInput)
        for publicKey in Secp256k1.recoverPublicKeys(signature64: token.signature, digest: digest) {
            if try Ethereum.address(uncompressedPublicKey: publicKey) == didEthrAddress { return }
        }
        throw CryptoError.invalidSignature
    }

    /// Checks an ES256 token against `publicKey`.
    ///
    /// Throws `CryptoError.disallowedAlgorithm` unless `alg` is exactly `ES256`, and
    /// `CryptoError.invalidSignature` if the 64-byte r ‖ s signature does not verify.
    package static func verifyES256(_ token: ParsedJWT, publicKey: P256PublicKey) throws {
        try requireAlgorithm(token, "ES256")
        guard publicKey.isValidSignature(token.signature, for: token.signingInput) else { throw CryptoError.invalidSignature }
    }

    private static func requireAlgorithm(_ token: ParsedJWT, _ expected: String) throws {
        // `none` (any case) can never pass, whatever a caller asks for.
        guard token.alg.lowercased() != "none", token.alg == expected else { throw CryptoError.disallowedAlgorithm }
    }
}
