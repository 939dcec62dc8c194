import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct HKDFTests {
    @Test func rfc5869TestCase1DerivesTheExpectedKey() throws {
        let okm = try HKDF.deriveKey(
            inputKey: SecretBytes([UInt8](repeating: 0x0b, count: 22)),
            salt: hex("000102030405060708090a0b0c"),
            info: hex("f0f1f2f3f4f5f6f7f8f9"),
            outputCount: 42)
        #expect(okm.copyBytes() == hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
    }

    @Test func rfc5869TestCase3WithEmptySaltAndInfoDerivesTheExpectedKey() throws {
        let okm = try HKDF.deriveKey(inputKey: SecretBytes([UInt8](repeating: 0x0b, count: 22)), salt: [], info: [], outputCount: 42)
        #expect(okm.copyBytes() == hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    @Test func differentInfoLabelsDeriveDifferentKeys() throws {
        let input = SecretBytes([UInt8](repeating: 7, count: 32))
        let a = try HKDF.deriveKey(inputKey: input, salt: [], info: bytes("a"), outputCount: 32)
        let b = try HKDF.deriveKey(inputKey: input, salt: [], info: bytes("b"), outputCount: 32)
        #expect(!a.constantTimeEquals(b))
    }

    @Test func impossibleOutputLengthsAreRefused() {
        let input = SecretBytes([1, 2, 3])
        #expect(throws: CryptoError.self) { try HKDF.deriveKey(inputKey: input, salt: [], info: [], outputCount: 0) }
        #expect(throws: CryptoError.self) { try HKDF.deriveKey(inputKey: input, salt: [], info: [], outputCount: 255 * 32 + 1) }
        #expect(throws: CryptoError.self) { try HKDF.deriveKey(inputKey: SecretBytes([]), salt: [], info: [], outputCount: 32) }
    }
}
