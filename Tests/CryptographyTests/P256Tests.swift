import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct P256Tests {
    /// RFC 6979 A.2.5 (P-256): the private key x = C9AFA9D8…0F6721 as PKCS#8 PEM.
    static let rfc6979PEM = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgya+p2EW6dRZrXCFX
    Z7HWk05Qw9s26JsSe4piKxIPZyGhRANCAARg/tS6JVqdMclh63TGNW1owEm4kjth
    +mzmaWIuYPKftnkD/hAIuLyZpBrp6VYovGTy8bIMLX6fUXejwpTURiKZ
    -----END PRIVATE KEY-----
    """
    /// RFC 6979 A.2.5 public key U = (Ux, Uy), uncompressed.
    static let rfc6979PublicKey = "04" + "60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6"
        + "7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299"
    /// RFC 6979 A.2.5, With SHA-256, message = "sample": r ‖ s.
    static let rfc6979SampleSignature = "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716"
        + "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"

    @Test func theRFC6979SampleSignatureVerifies() throws {
        let publicKey = try P256PublicKey(rawRepresentation: hex(Self.rfc6979PublicKey))
        #expect(publicKey.isValidSignature(hex(Self.rfc6979SampleSignature), for: bytes("sample")))
    }

    @Test func aTamperedRFC6979SignatureOrMessageFailsToVerify() throws {
        let publicKey = try P256PublicKey(rawRepresentation: hex(Self.rfc6979PublicKey))
        #expect(!publicKey.isValidSignature(flippingBit(hex(Self.rfc6979SampleSignature), at: 3), for: bytes("sample")))
        #expect(!publicKey.isValidSignature(flippingBit(hex(Self.rfc6979SampleSignature), at: 60), for: bytes("sample")))
        #expect(!publicKey.isValidSignature(hex(Self.rfc6979SampleSignature), for: bytes("test")))
        #expect(!publicKey.isValidSignature(Array(hex(Self.rfc6979SampleSignature).prefix(63)), for: bytes("sample")))
        #expect(!publicKey.isValidSignature([UInt8](repeating: 0, count: 64), for: bytes("sample")))
    }

    @Test func aPKCS8PEMLoadsWithItsPublishedPublicKey() throws {
        let key = try P256PrivateKey(pkcs8PEM: Self.rfc6979PEM)
        #expect(key.publicKey.rawRepresentation == hex(Self.rfc6979PublicKey))
    }

    @Test func aSignatureRoundTripsAndIs64Bytes() throws {
        let key = try P256PrivateKey(pkcs8PEM: Self.rfc6979PEM)
        let signature = try key.signature(for: bytes("sample"))
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: bytes("sample")))
        // ECDSA with random nonces: a second signature differs and also verifies.
        let second = try key.signature(for: bytes("sample"))
        #expect(second != signature)
        #expect(key.publicKey.isValidSignature(second, for: bytes("sample")))
    }

    @Test func aTamperedSignatureOrAnotherKeyFailsToVerify() throws {
        let key = try P256PrivateKey.generate()
        let signature = try key.signature(for: bytes("payload"))
        #expect(!key.publicKey.isValidSignature(flippingBit(signature, at: 10), for: bytes("payload")))
        #expect(!key.publicKey.isValidSignature(signature, for: bytes("payloaD")))
        #expect(!(try P256PrivateKey.generate()).publicKey.isValidSignature(signature, for: bytes("payload")))
    }

    @Test func aGeneratedKeyExportsAndReloadsAsPKCS8() throws {
        let key = try P256PrivateKey.generate()
        let pem = try key.pkcs8PEM
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try P256PrivateKey(pkcs8PEM: pem)
        #expect(reloaded.publicKey == key.publicKey)
        #expect(key.publicKey.isValidSignature(try reloaded.signature(for: bytes("x")), for: bytes("x")))
    }

    @Test func malformedPEMIsATypedError() {
        let body = Self.rfc6979PEM.split(separator: "\n").dropFirst().dropLast().joined(separator: "\n")
        for pem in [
            "",
            "not a pem",
            body,  // base64 without the armour
            Self.rfc6979PEM.replacing("ya+p2EW6", with: "ya+p2EW7xx"),  // corrupted body
            Self.rfc6979PEM.replacing("-----END PRIVATE KEY-----", with: ""),
        ] {
            #expect(throws: CryptoError.self) { try P256PrivateKey(pkcs8PEM: pem) }
        }
    }

    @Test func aLegacyECPrivateKeyBlockIsRefused() {
        let sec1 = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIMmvqdhFunUWa1whV2ex1pNOUMPbNuibEnuKYisSD2choAoGCCqGSM49
        AwEHoUQDQgAEYP7UuiVanTHJYet0xjVtaMBJuJI7Yfps5mliLmDyn7Z5A/4QCLi8
        maQa6elWKLxk8vGyDC1+n1F3o8KU1EYimQ==
        -----END EC PRIVATE KEY-----
        """
        #expect(throws: CryptoError.malformedInput("expected a PEM PRIVATE KEY (PKCS#8) block")) { try P256PrivateKey(pkcs8PEM: sec1) }
    }

    @Test func aKeyOnAnotherCurveIsRefused() {
        let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDGYEKrPbxiajVgKwns
        vLxrNCj5guX2HildfdDwKSRs+pZry7jijjTeokofyzvuOxuhZANiAASOtPuMl3hj
        NS0vyZ0f1JWZziDX68NZO0G4KUk78fueIe7Qv2V6wIVeoWnvX3WLF7aRU9D2cLyT
        rI+SY7sSjTQqv4j4VPjDdM6hsYvM8FGWDldIMIzjmEVBaTRcpB36jkc=
        -----END PRIVATE KEY-----
        """
        #expect(throws: CryptoError.invalidKey("not a P-256 (prime256v1) EC key")) { try P256PrivateKey(pkcs8PEM: p384) }
    }

    @Test func aPublicPointOffTheCurveIsRefused() {
        var point = hex(Self.rfc6979PublicKey)
        point[64] ^= 0x01
        #expect(throws: CryptoError.self) { try P256PublicKey(rawRepresentation: point) }
        #expect(throws: CryptoError.self) { try P256PublicKey(rawRepresentation: Array(point.prefix(33))) }
    }
}
