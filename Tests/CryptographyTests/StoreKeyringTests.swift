import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct StoreKeyringTests {
    static func keyring(_ fill: UInt8 = 1) throws -> StoreKeyring {
        try StoreKeyring(storeKey: SecretBytes([UInt8](repeating: fill, count: 32)))
    }

    @Test func aSealedSecretOpensForItsPurpose() throws {
        let keyring = try Self.keyring()
        let sealed = try keyring.seal(bytes("grant secret 42"), purpose: "grant-secret")
        #expect(try keyring.open(sealed, purpose: "grant-secret").copyBytes() == bytes("grant secret 42"))
        #expect(!sealed.contains(subsequence: bytes("grant secret")))
    }

    @Test func aCiphertextMovedToAnotherPurposeFailsToOpen() throws {
        let keyring = try Self.keyring()
        let sealed = try keyring.seal(bytes("token"), purpose: "grant-secret")
        #expect(throws: CryptoError.authenticationFailed) { try keyring.open(sealed, purpose: "apns-token") }
    }

    @Test func anotherStoreKeyFailsToOpen() throws {
        let sealed = try Self.keyring(1).seal(bytes("token"), purpose: "grant-secret")
        #expect(throws: CryptoError.authenticationFailed) { try Self.keyring(2).open(sealed, purpose: "grant-secret") }
    }

    @Test func aTamperedCiphertextFailsToOpen() throws {
        let keyring = try Self.keyring()
        let sealed = try keyring.seal(bytes("token"), purpose: "grant-secret")
        #expect(throws: CryptoError.authenticationFailed) { try keyring.open(flippingBit(sealed, at: 14), purpose: "grant-secret") }
    }

    @Test func theSealingKeyIsNotTheStoreKeyItself() throws {
        let storeKey = SecretBytes([UInt8](repeating: 1, count: 32))
        let sealed = try StoreKeyring(storeKey: storeKey).seal(bytes("token"), purpose: "p")
        #expect(throws: CryptoError.authenticationFailed) { try AESGCM.open(sealed, key: storeKey, associatedData: bytes("p")) }
    }

    @Test func theBlindIndexIsDeterministicAnd32Bytes() throws {
        let a = try Self.keyring().blindIndex(bytes("endpoint-1"), purpose: "endpoint-id")
        let b = try Self.keyring().blindIndex(bytes("endpoint-1"), purpose: "endpoint-id")
        #expect(a == b)
        #expect(a.count == 32)
        #expect(a != (try Self.keyring().blindIndex(bytes("endpoint-2"), purpose: "endpoint-id")))
    }

    @Test func theBlindIndexIsSeparatedByPurposeAndKey() throws {
        let keyring = try Self.keyring()
        let value = bytes("same value")
        #expect(keyring.blindIndex(value, purpose: "grant-secret") != keyring.blindIndex(value, purpose: "apns-token"))
        #expect(keyring.blindIndex(value, purpose: "grant-secret") != (try Self.keyring(2)).blindIndex(value, purpose: "grant-secret"))
    }

    @Test func theBlindIndexFramingKeepsPurposeAndValueApart() throws {
        // "ab" ‖ 0 ‖ "c" must differ from "a" ‖ 0 ‖ "bc": the separator and the NUL-free purpose make the split unique.
        let keyring = try Self.keyring()
        #expect(keyring.blindIndex(bytes("c"), purpose: "ab") != keyring.blindIndex(bytes("bc"), purpose: "a"))
    }

    @Test func theBlindIndexIsHMACUnderADerivedKeyNotTheStoreKey() throws {
        let storeKey = SecretBytes([UInt8](repeating: 1, count: 32))
        let index = try StoreKeyring(storeKey: storeKey).blindIndex(bytes("v"), purpose: "p")
        #expect(index != HMACSHA256.authenticate(key: storeKey, message: bytes("p") + [0] + bytes("v")))
    }

    @Test func aStoreKeyThatIsNot32BytesIsRefused() {
        #expect(throws: CryptoError.invalidKey("the store key must be 32 bytes")) { try StoreKeyring(storeKey: SecretBytes([UInt8](repeating: 1, count: 31))) }
        #expect(throws: CryptoError.invalidKey("the store key must be 32 bytes")) { try StoreKeyring(storeKey: SecretBytes([])) }
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard subsequence.count <= count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<($0 + subsequence.count)]) == subsequence }
    }
}
