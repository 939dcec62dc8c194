import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct EthereumTests {
    /// EIP-55's own examples.
    static let eip55 = [
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
        "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
        "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
    ]

    @Test func eip55ExamplesGetTheirChecksumSpelling() throws {
        for spelled in Self.eip55 {
            let address = hex(String(spelled.dropFirst(2)))
            #expect(try Ethereum.checksumAddress(address) == spelled)
        }
    }

    @Test func theReferenceKeyHasTheReferenceAddress() throws {
        // docs/protocols/jwt-pool.md, test vector 1
        let key = try Secp256k1PrivateKey(rawRepresentation: SecretBytes(hex("278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f")))
        #expect(try Ethereum.address(uncompressedPublicKey: key.publicKey(compressed: false)) == hex("f3beac30c498d9e26865f34fcaa57dbb935b0d74"))
    }

    @Test func theBare64ByteKeyGivesTheSameAddress() throws {
        let key = try Secp256k1PrivateKey.generate()
        let full = key.publicKey(compressed: false)
        #expect(try Ethereum.address(uncompressedPublicKey: Array(full.dropFirst())) == (try Ethereum.address(uncompressedPublicKey: full)))
    }

    @Test func compressedOrMalformedKeysAreRefused() throws {
        let key = try Secp256k1PrivateKey.generate()
        #expect(throws: CryptoError.self) { try Ethereum.address(uncompressedPublicKey: key.publicKey(compressed: true)) }
        var wrongPrefix = key.publicKey(compressed: false)
        wrongPrefix[0] = 0x05
        #expect(throws: CryptoError.self) { try Ethereum.address(uncompressedPublicKey: wrongPrefix) }
        #expect(throws: CryptoError.self) { try Ethereum.checksumAddress([UInt8](repeating: 0, count: 19)) }
    }
}
