import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct HMACSHA256Tests {
    /// RFC 4231 §4: test cases 1–4, 6 and 7 (case 5 is a truncated MAC, not offered here).
    static let rfc4231: [(name: String, key: [UInt8], data: [UInt8], mac: String)] = [
        ("1", [UInt8](repeating: 0x0b, count: 20), bytes("Hi There"),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("2", bytes("Jefe"), bytes("what do ya want for nothing?"),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("3", [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ("4", Array(1...25), [UInt8](repeating: 0xcd, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ("6", [UInt8](repeating: 0xaa, count: 131), bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ("7", [UInt8](repeating: 0xaa, count: 131),
         bytes("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test(arguments: 0..<6) func rfc4231VectorsAuthenticate(index: Int) {
        let vector = Self.rfc4231[index]
        #expect(HMACSHA256.authenticate(key: SecretBytes(vector.key), message: vector.data) == hex(vector.mac), "RFC 4231 case \(vector.name)")
    }

    @Test func aCorrectMacIsValid() {
        let vector = Self.rfc4231[1]
        #expect(HMACSHA256.isValid(hex(vector.mac), key: SecretBytes(vector.key), message: vector.data))
    }

    @Test func aMacWithAFlippedBitIsInvalid() {
        let vector = Self.rfc4231[1]
        for index in [0, 15, 31] {
            #expect(!HMACSHA256.isValid(flippingBit(hex(vector.mac), at: index), key: SecretBytes(vector.key), message: vector.data))
        }
    }

    @Test func aMacOverAnotherMessageOrKeyIsInvalid() {
        let vector = Self.rfc4231[1]
        #expect(!HMACSHA256.isValid(hex(vector.mac), key: SecretBytes(vector.key), message: vector.data + [0]))
        #expect(!HMACSHA256.isValid(hex(vector.mac), key: SecretBytes(bytes("Jeff")), message: vector.data))
    }

    @Test func aTruncatedOrEmptyMacIsInvalid() {
        let vector = Self.rfc4231[1]
        #expect(!HMACSHA256.isValid(Array(hex(vector.mac).prefix(16)), key: SecretBytes(vector.key), message: vector.data))
        #expect(!HMACSHA256.isValid([], key: SecretBytes(vector.key), message: vector.data))
    }
}
