import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct JWTTests {
    static let referenceKeyHex = "278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f"
    static let referenceAddress = "f3beac30c498d9e26865f34fcaa57dbb935b0d74"
    /// docs/protocols/jwt-pool.md, test vector 2.
    static let referenceJWS = "eyJhbGciOiJFUzI1NksifQ.eyJzb21lIjoiZGF0YSJ9.dblNz-7BVLknOFIBPmt5VTG0MDls_Q69WI8OfQuqNdUp4y50-b8Ubn0xujm1ijfmfqRunpks5TyWqgMsQkR_GQ"

    static func referenceKey() throws -> Secp256k1PrivateKey {
        try Secp256k1PrivateKey(rawRepresentation: SecretBytes(hex(referenceKeyHex)))
    }

    /// A token whose segments are replaced by the given JSON/bytes, keeping the rest of `base`.
    static func reassemble(header: [UInt8]? = nil, payload: [UInt8]? = nil, signature: [UInt8]? = nil, from base: ParsedJWT) -> String {
        [header ?? base.headerJSON, payload ?? base.payloadJSON, signature ?? base.signature].map(Base64URL.encode).joined(separator: ".")
    }

    @Test func theReferenceJWSIsReproducedByteForByte() throws {
        let token = try JWT.encode(headerJSON: bytes(#"{"alg":"ES256K"}"#), payloadJSON: bytes(#"{"some":"data"}"#), signer: .es256k(Self.referenceKey()))
        #expect(token == Self.referenceJWS)
    }

    @Test func theDidJwtHeaderEncodesToItsKnownBytes() {
        let token = JWT.encode(headerJSON: bytes(#"{"typ":"JWT","alg":"ES256K"}"#), payloadJSON: bytes("{}")) { _ in [] }
        #expect(token.hasPrefix("eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NksifQ."))
    }

    @Test func theReferenceJWSParsesIntoItsParts() throws {
        let parsed = try JWT.parse(Self.referenceJWS)
        #expect(parsed.alg == "ES256K")
        #expect(parsed.headerJSON == bytes(#"{"alg":"ES256K"}"#))
        #expect(parsed.payloadJSON == bytes(#"{"some":"data"}"#))
        #expect(parsed.signature.count == 64)
        #expect(parsed.signingInput == bytes("eyJhbGciOiJFUzI1NksifQ.eyJzb21lIjoiZGF0YSJ9"))
    }

    @Test func theReferenceJWSVerifiesAgainstItsDIDAddress() throws {
        try JWT.verifyES256K(JWT.parse(Self.referenceJWS), didEthrAddress: hex(Self.referenceAddress))
    }

    @Test func aMintedPoolTokenVerifiesAgainstTheIssuersDID() throws {
        let key = try Secp256k1PrivateKey.generate()
        let did = DIDEthr.did(for: key)
        let payload = #"{"iat":1767139200,"exp":1767312300,"nbf":1767225300,"iss":"\#(did)"}"#
        let token = try JWT.encode(headerJSON: bytes(#"{"typ":"JWT","alg":"ES256K"}"#), payloadJSON: bytes(payload), signer: .es256k(key))
        #expect(token.split(separator: ".")[2].count == 86)
        try JWT.verifyES256K(JWT.parse(token), didEthrAddress: #require(DIDEthr.address(fromDID: did)))
    }

    @Test func aChangedPayloadFailsToVerify() throws {
        let parsed = try JWT.parse(Self.referenceJWS)
        let forged = try JWT.parse(Self.reassemble(payload: bytes(#"{"some":"date"}"#), from: parsed))
        #expect(throws: CryptoError.invalidSignature) { try JWT.verifyES256K(forged, didEthrAddress: hex(Self.referenceAddress)) }
    }

    @Test func aChangedSignatureFailsToVerify() throws {
        let parsed = try JWT.parse(Self.referenceJWS)
        for index in [0, 31, 32, 63] {
            let forged = try JWT.parse(Self.reassemble(signature: flippingBit(parsed.signature, at: index), from: parsed))
            #expect(throws: CryptoError.invalidSignature) { try JWT.verifyES256K(forged, didEthrAddress: hex(Self.referenceAddress)) }
        }
        let truncated = try JWT.parse(Self.reassemble(signature: Array(parsed.signature.prefix(63)), from: parsed))
        #expect(throws: CryptoError.invalidSignature) { try JWT.verifyES256K(truncated, didEthrAddress: hex(Self.referenceAddress)) }
    }

    @Test func anotherIssuersAddressFailsToVerify() throws {
        var address = hex(Self.referenceAddress)
        address[19] ^= 1
        #expect(throws: CryptoError.invalidSignature) { try JWT.verifyES256K(JWT.parse(Self.referenceJWS), didEthrAddress: address) }
    }

    @Test func algNoneIsAlwaysRefused() throws {
        let parsed = try JWT.parse(Self.referenceJWS)
        for alg in ["none", "None", "NONE"] {
            let unsigned = try JWT.parse(Self.reassemble(header: bytes(#"{"alg":"\#(alg)"}"#), signature: [], from: parsed))
            #expect(throws: CryptoError.disallowedAlgorithm) { try JWT.verifyES256K(unsigned, didEthrAddress: hex(Self.referenceAddress)) }
            #expect(throws: CryptoError.disallowedAlgorithm) { try JWT.verifyES256(unsigned, publicKey: P256PrivateKey.generate().publicKey) }
        }
    }

    @Test func aSwappedAlgIsRefused() throws {
        // The ES256K signature stays valid over an unchanged signing input only if the header is unchanged;
        // here the header claims ES256 (or ES256K-R) and each verifier must refuse it by name.
        let parsed = try JWT.parse(Self.referenceJWS)
        let es256 = try JWT.parse(Self.reassemble(header: bytes(#"{"alg":"ES256"}"#), from: parsed))
        #expect(throws: CryptoError.disallowedAlgorithm) { try JWT.verifyES256K(es256, didEthrAddress: hex(Self.referenceAddress)) }
        #expect(throws: CryptoError.disallowedAlgorithm) { try JWT.verifyES256(parsed, publicKey: P256PrivateKey.generate().publicKey) }
        let hs256 = try JWT.parse(Self.reassemble(header: bytes(#"{"alg":"HS256"}"#), from: parsed))
        #expect(throws: CryptoError.disallowedAlgorithm) { try JWT.verifyES256K(hs256, didEthrAddress: hex(Self.referenceAddress)) }
    }

    @Test func anES256TokenRoundTripsAndRefusesTampering() throws {
        let key = try P256PrivateKey.generate()
        let token = try JWT.encode(headerJSON: bytes(#"{"alg":"ES256","kid":"ABC123DEFG"}"#), payloadJSON: bytes(#"{"iss":"TEAM","iat":1}"#), signer: .es256(key))
        let parsed = try JWT.parse(token)
        #expect(parsed.signature.count == 64)
        try JWT.verifyES256(parsed, publicKey: key.publicKey)
        let forged = try JWT.parse(Self.reassemble(payload: bytes(#"{"iss":"TEAM","iat":2}"#), from: parsed))
        #expect(throws: CryptoError.invalidSignature) { try JWT.verifyES256(forged, publicKey: key.publicKey) }
        #expect(throws: CryptoError.invalidSignature) { try JWT.verifyES256(parsed, publicKey: P256PrivateKey.generate().publicKey) }
    }

    @Test func aSignerRefusesAHeaderNamingAnotherAlgorithm() throws {
        #expect(throws: CryptoError.self) {
            try JWT.encode(headerJSON: bytes(#"{"alg":"ES256"}"#), payloadJSON: bytes("{}"), signer: .es256k(Self.referenceKey()))
        }
    }

    @Test func wrongSegmentCountsAreRefused() {
        for token in ["", "a", "eyJhbGciOiJFUzI1NksifQ.eyJzb21lIjoiZGF0YSJ9", Self.referenceJWS + ".", "a.b.c.d", ".."] {
            #expect(throws: CryptoError.self) { try JWT.parse(token) }
        }
    }

    @Test func badBase64URLSegmentsAreRefused() {
        let parts = Self.referenceJWS.split(separator: ".").map(String.init)
        for token in [
            parts[0] + "=." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + "==",
            parts[0] + "." + parts[1].replacing("J", with: "+") + "." + parts[2],
            parts[0] + "." + parts[1] + " ." + parts[2],
        ] {
            #expect(throws: CryptoError.self) { try JWT.parse(token) }
        }
    }

    @Test func oversizeTokensAreRefused() {
        let payload = bytes(#"{"pad":""#) + [UInt8](repeating: UInt8(ascii: "x"), count: 13_000) + bytes(#""}"#)
        let token = JWT.encode(headerJSON: bytes(#"{"alg":"ES256K"}"#), payloadJSON: payload) { _ in [UInt8](repeating: 1, count: 64) }
        #expect(token.utf8.count > JWT.maximumTokenLength)
        #expect(throws: CryptoError.malformedInput("token is longer than 16 KiB")) { try JWT.parse(token) }
    }

    @Test func headersThatAreNotStrictJSONObjectsWithAnAlgAreRefused() throws {
        let parsed = try JWT.parse(Self.referenceJWS)
        for header in [
            #"{"alg":"ES256K""#,                       // unterminated
            #"{"alg":"ES256K"} x"#,                    // trailing content
            #"["ES256K"]"#,                            // not an object
            #"{"typ":"JWT"}"#,                         // no alg
            #"{"alg":256}"#,                           // alg not a string
            #"{"alg":"ES256K","alg":"none"}"#,         // duplicate member
            #"{'alg':'ES256K'}"#,                      // not JSON quotes
            #"{"alg":"ES256K","crit":["exp"]}"#,       // critical extension
            #"{"alg":"ES256K","x":01}"#,               // leading zero
        ] {
            #expect(throws: CryptoError.self, "\(header)") { try JWT.parse(Self.reassemble(header: bytes(header), from: parsed)) }
        }
    }

    @Test func aPayloadThatIsNotAJSONObjectIsRefused() throws {
        let parsed = try JWT.parse(Self.referenceJWS)
        for payload in ["", "null", #"{"a":1,}"#, "{\"a\":\"\u{01}\"}"] {
            #expect(throws: CryptoError.self, "\(payload)") { try JWT.parse(Self.reassemble(payload: bytes(payload), from: parsed)) }
        }
        #expect(throws: CryptoError.self) { try JWT.parse(Self.reassemble(payload: [0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d], from: parsed)) }
    }

    @Test func theHeaderReaderDecodesEscapesAndIgnoresOtherValues() throws {
        let strings = try StrictJSON.topLevelStrings(bytes(#" { "alg" : "E\u0053256K", "n": -1.5e3, "o": {"alg":"none"}, "a": [true, false, null], "s": "\ud83d\ude00\n" } "#))
        #expect(strings == ["alg": "ES256K", "s": "😀\n"])
        #expect(throws: CryptoError.self) { try StrictJSON.topLevelStrings(bytes(#"{"s":"\ud83d"}"#)) }
    }
}
