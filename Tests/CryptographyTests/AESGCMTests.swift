import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct AESGCMTests {
    /// McGrew & Viega, "The Galois/Counter Mode of Operation", test cases 13–16 (AES-256).
    static let vectors: [(name: String, key: String, nonce: String, plaintext: String, aad: String, ciphertext: String, tag: String)] = [
        ("13", String(repeating: "00", count: 32), String(repeating: "00", count: 12), "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
        ("14", String(repeating: "00", count: 32), String(repeating: "00", count: 12), String(repeating: "00", count: 16), "",
         "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("15", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255", "",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
         "b094dac5d93471bdec1a502270e3cc6c"),
        ("16", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
         "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
         "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test(arguments: 0..<4) func nistVectorsSealToTheExpectedCiphertextAndTag(index: Int) throws {
        let v = Self.vectors[index]
        let (ciphertext, tag) = try AESGCM.seal(hex(v.plaintext), key: SecretBytes(hex(v.key)), nonce: hex(v.nonce), associatedData: hex(v.aad))
        #expect(ciphertext == hex(v.ciphertext), "case \(v.name) ciphertext")
        #expect(tag == hex(v.tag), "case \(v.name) tag")
    }

    @Test(arguments: 0..<4) func nistVectorsOpenToThePlaintext(index: Int) throws {
        let v = Self.vectors[index]
        let combined = hex(v.nonce) + hex(v.ciphertext) + hex(v.tag)
        #expect(try AESGCM.open(combined, key: SecretBytes(hex(v.key)), associatedData: hex(v.aad)) == hex(v.plaintext))
    }

    @Test func aSealedMessageRoundTripsWithAFreshNonceEachTime() throws {
        let key = try SecretBytes.random(count: 32)
        let a = try AESGCM.seal(bytes("attack at dawn"), key: key, associatedData: bytes("col"))
        let b = try AESGCM.seal(bytes("attack at dawn"), key: key, associatedData: bytes("col"))
        #expect(a.count == 12 + 14 + 16)
        #expect(a != b)
        #expect(try AESGCM.open(a, key: key, associatedData: bytes("col")) == bytes("attack at dawn"))
        #expect(try AESGCM.open(b, key: key, associatedData: bytes("col")) == bytes("attack at dawn"))
    }

    @Test func anEmptyPlaintextRoundTrips() throws {
        let key = try SecretBytes.random(count: 32)
        let sealed = try AESGCM.seal([], key: key)
        #expect(sealed.count == 28)
        #expect(try AESGCM.open(sealed, key: key) == [])
    }

    @Test func aTamperedNonceCiphertextOrTagFailsToOpen() throws {
        let key = try SecretBytes.random(count: 32)
        let sealed = try AESGCM.seal(bytes("sixteen byte msg"), key: key, associatedData: bytes("aad"))
        // nonce 0..<12, ciphertext 12..<28, tag 28..<44
        for index in [0, 11, 12, 27, 28, 43] {
            #expect(throws: CryptoError.authenticationFailed) {
                try AESGCM.open(flippingBit(sealed, at: index), key: key, associatedData: bytes("aad"))
            }
        }
    }

    @Test func aTamperedTagFailsToOpen() throws {
        let v = Self.vectors[3]
        let combined = hex(v.nonce) + hex(v.ciphertext) + flippingBit(hex(v.tag), at: 15)
        #expect(throws: CryptoError.authenticationFailed) {
            try AESGCM.open(combined, key: SecretBytes(hex(v.key)), associatedData: hex(v.aad))
        }
    }

    @Test func differentAssociatedDataFailsToOpen() throws {
        let key = try SecretBytes.random(count: 32)
        let sealed = try AESGCM.seal(bytes("secret"), key: key, associatedData: bytes("grant-secret"))
        #expect(throws: CryptoError.authenticationFailed) { try AESGCM.open(sealed, key: key, associatedData: bytes("apns-token")) }
        #expect(throws: CryptoError.authenticationFailed) { try AESGCM.open(sealed, key: key, associatedData: []) }
    }

    @Test func anotherKeyFailsToOpen() throws {
        let sealed = try AESGCM.seal(bytes("secret"), key: try SecretBytes.random(count: 32))
        #expect(throws: CryptoError.authenticationFailed) { try AESGCM.open(sealed, key: try SecretBytes.random(count: 32)) }
    }

    @Test func inputShorterThanNonceAndTagIsMalformed() throws {
        let key = try SecretBytes.random(count: 32)
        for count in [0, 12, 27] {
            #expect(throws: CryptoError.malformedInput("sealed data is shorter than a nonce and a tag")) {
                try AESGCM.open([UInt8](repeating: 0, count: count), key: key)
            }
        }
    }

    @Test func aKeyThatIsNot32BytesIsRefused() {
        #expect(throws: CryptoError.invalidKey("AES-256-GCM needs a 32-byte key")) { try AESGCM.seal([1], key: SecretBytes([UInt8](repeating: 0, count: 16))) }
        #expect(throws: CryptoError.invalidKey("AES-256-GCM needs a 32-byte key")) { try AESGCM.open([UInt8](repeating: 0, count: 40), key: SecretBytes([])) }
    }
}
