import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct Secp256k1Tests {
    /// docs/protocols/jwt-pool.md, test vector 1 (did-jwt ES256KSigner.test.ts).
    static let privateKey = "278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f"
    static let message = "thequickbrownfoxjumpedoverthelazyprogrammer"
    static let signature = "jsvdLwqr-O206hkegoq6pbo7LJjCaflEKHCvfohBP9U2H9EZ5Jsw0CncN17WntoUEGmxaZVF2zQjtUEXfhdyBg"
    static let compressedPublicKey = "03fdd57adec3d438ea237fe46b33ee1e016eda6b585c3e27ea66686c2ea5358479"

    static func referenceKey() throws -> Secp256k1PrivateKey {
        try Secp256k1PrivateKey(rawRepresentation: SecretBytes(hex(privateKey)))
    }

    @Test func theReferenceSignatureIsReproducedByteForByte() throws {
        let signature = try Self.referenceKey().signature(for: bytes(Self.message))
        #expect(Base64URL.encode(signature) == Self.signature)
    }

    @Test func theReferenceKeyHasTheReferenceCompressedPublicKey() throws {
        let key = try Self.referenceKey()
        #expect(key.publicKey(compressed: true) == hex(Self.compressedPublicKey))
        #expect(key.publicKey(compressed: false).count == 65)
        #expect(key.publicKey(compressed: false)[0] == 0x04)
    }

    @Test func signingIsDeterministicAndLowS() throws {
        let key = try Secp256k1PrivateKey.generate()
        let digest = SHA256.hash(bytes("m"))
        let a = try key.signature(forDigest: digest)
        #expect(a == (try key.signature(forDigest: digest)))
        // s ≤ n/2 = 7fffffff ffffffff ffffffff ffffffff 5d576e73 57a4501d dfe92f46 681b20a0
        let halfOrder = hex("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0")
        #expect(Array(a[32...]).lexicographicallyPrecedes(halfOrder) || Array(a[32...]) == halfOrder)
    }

    @Test func aSignatureVerifiesForItsKeyAndDigest() throws {
        let key = try Self.referenceKey()
        let digest = SHA256.hash(bytes(Self.message))
        let signature = try Base64URL.decode(Self.signature)
        #expect(Secp256k1.isValidSignature(signature, digest: digest, publicKey: key.publicKey(compressed: true)))
        #expect(Secp256k1.isValidSignature(signature, digest: digest, publicKey: key.publicKey(compressed: false)))
    }

    @Test func aTamperedSignatureDigestOrKeyFailsToVerify() throws {
        let key = try Self.referenceKey()
        let digest = SHA256.hash(bytes(Self.message))
        let signature = try Base64URL.decode(Self.signature)
        #expect(!Secp256k1.isValidSignature(flippingBit(signature, at: 5), digest: digest, publicKey: key.publicKey(compressed: true)))
        #expect(!Secp256k1.isValidSignature(flippingBit(signature, at: 40), digest: digest, publicKey: key.publicKey(compressed: true)))
        #expect(!Secp256k1.isValidSignature(signature, digest: flippingBit(digest, at: 0), publicKey: key.publicKey(compressed: true)))
        #expect(!Secp256k1.isValidSignature(signature, digest: digest, publicKey: try Secp256k1PrivateKey.generate().publicKey(compressed: true)))
        #expect(!Secp256k1.isValidSignature(Array(signature.prefix(63)), digest: digest, publicKey: key.publicKey(compressed: true)))
    }

    @Test func aHighSTwinIsRefused() throws {
        let key = try Self.referenceKey()
        let digest = SHA256.hash(bytes(Self.message))
        let signature = try Base64URL.decode(Self.signature)
        let twin = Array(signature[..<32]) + Self.negateModN(Array(signature[32...]))
        #expect(!Secp256k1.isValidSignature(twin, digest: digest, publicKey: key.publicKey(compressed: true)))
        #expect(Secp256k1.recoverPublicKeys(signature64: twin, digest: digest).isEmpty)
    }

    @Test func recoveryFindsTheSignersKey() throws {
        let key = try Self.referenceKey()
        let digest = SHA256.hash(bytes(Self.message))
        let recovered = Secp256k1.recoverPublicKeys(signature64: try Base64URL.decode(Self.signature), digest: digest)
        #expect(recovered.count == 2)
        #expect(recovered.contains(key.publicKey(compressed: false)))
    }

    @Test func recoveryFromATamperedDigestDoesNotFindTheSigner() throws {
        let key = try Self.referenceKey()
        let digest = flippingBit(SHA256.hash(bytes(Self.message)), at: 31)
        let recovered = Secp256k1.recoverPublicKeys(signature64: try Base64URL.decode(Self.signature), digest: digest)
        #expect(!recovered.contains(key.publicKey(compressed: false)))
    }

    @Test func outOfRangeOrWrongLengthPrivateKeysAreRefused() {
        let order = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
        for raw in [String(repeating: "00", count: 32), order, String(repeating: "ff", count: 32), String(repeating: "01", count: 31)] {
            #expect(throws: CryptoError.self) { try Secp256k1PrivateKey(rawRepresentation: SecretBytes(hex(raw))) }
        }
    }

    @Test func aDigestThatIsNot32BytesIsRefused() throws {
        let key = try Secp256k1PrivateKey.generate()
        #expect(throws: CryptoError.self) { try key.signature(forDigest: bytes("short")) }
    }

    @Test func generatedKeysDiffer() throws {
        #expect(try Secp256k1PrivateKey.generate().publicKey(compressed: true) != Secp256k1PrivateKey.generate().publicKey(compressed: true))
    }

    /// n − s for a 32-byte big-endian s (the curve order n of secp256k1).
    static func negateModN(_ s: [UInt8]) -> [UInt8] {
        let n = hex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
        var out = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for i in stride(from: 31, through: 0, by: -1) {
            var d = Int(n[i]) - Int(s[i]) - borrow
            borrow = d < 0 ? 1 : 0
            if d < 0 { d += 256 }
            out[i] = UInt8(d)
        }
        return out
    }
}

@Suite(.timeLimit(.minutes(15))) struct Secp256k1ConcurrencyTests {
    @Test func concurrentSignersShareTheContextAndAgree() async throws {
        let key = try Secp256k1Tests.referenceKey()
        let expected = try Base64URL.decode(Secp256k1Tests.signature)
        let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var last: [UInt8] = []
                    for _ in 0..<200 { last = try key.signature(for: bytes(Secp256k1Tests.message)) }
                    return last
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 8)
        #expect(results.allSatisfy { $0 == expected })
    }
}
