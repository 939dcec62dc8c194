import COpenSSL
import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct Ed25519Tests {
    /// RFC 8032 §7.1: TEST 1, 2, 3 and TEST SHA(abc).
    static let vectors: [(name: String, seed: String, publicKey: String, message: String, signature: String)] = [
        ("1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        ("3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
         "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
         "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
        ("SHA(abc)", "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
         "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
         "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
         "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"),
    ]

    @Test(arguments: 0..<4) func rfc8032VectorsDeriveTheirPublicKeyAndSignature(index: Int) throws {
        let v = Self.vectors[index]
        let key = try Ed25519PrivateKey(seed: SecretBytes(hex(v.seed)))
        #expect(key.publicKey == hex(v.publicKey), "TEST \(v.name) public key")
        #expect(try key.sign(hex(v.message)) == hex(v.signature), "TEST \(v.name) signature")
    }

    @Test(arguments: 0..<4) func rfc8032SignaturesVerify(index: Int) throws {
        let v = Self.vectors[index]
        let publicKey = try Ed25519PublicKey(rawRepresentation: hex(v.publicKey))
        #expect(publicKey.isValidSignature(hex(v.signature), for: hex(v.message)))
    }

    @Test func aTamperedSignatureOrMessageFailsToVerify() throws {
        let v = Self.vectors[2]
        let publicKey = try Ed25519PublicKey(rawRepresentation: hex(v.publicKey))
        #expect(!publicKey.isValidSignature(flippingBit(hex(v.signature), at: 0), for: hex(v.message)))
        #expect(!publicKey.isValidSignature(flippingBit(hex(v.signature), at: 63), for: hex(v.message)))
        #expect(!publicKey.isValidSignature(hex(v.signature), for: flippingBit(hex(v.message), at: 1)))
        #expect(!publicKey.isValidSignature(hex(v.signature), for: hex(v.message) + [0]))
        #expect(!publicKey.isValidSignature(Array(hex(v.signature).prefix(63)), for: hex(v.message)))
    }

    @Test func anotherKeysSignatureFailsToVerify() throws {
        let signer = try Ed25519PrivateKey.generate()
        let other = try Ed25519PrivateKey.generate()
        let signature = try signer.sign(bytes("hello"))
        #expect(signer.publicKeyValue.isValidSignature(signature, for: bytes("hello")))
        #expect(!other.publicKeyValue.isValidSignature(signature, for: bytes("hello")))
    }

    @Test func theSeedRoundTrips() throws {
        let key = try Ed25519PrivateKey.generate()
        let again = try Ed25519PrivateKey(seed: key.seed)
        #expect(again.publicKey == key.publicKey)
        #expect(key.seed.count == 32)
    }

    @Test func wrongLengthKeysAreRefused() {
        #expect(throws: CryptoError.self) { try Ed25519PrivateKey(seed: SecretBytes([UInt8](repeating: 1, count: 31))) }
        #expect(throws: CryptoError.self) { try Ed25519PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33)) }
    }

    @Test func theEVPKeyIsTheSameEd25519Key() throws {
        let key = try Ed25519PrivateKey(seed: SecretBytes(hex(Self.vectors[0].seed)))
        let publicKey: [UInt8] = key.withEVPPrivateKey { pkey in
            var out = [UInt8](repeating: 0, count: 32)
            var length = 32
            _ = EVP_PKEY_get_raw_public_key(pkey, &out, &length)
            #expect(EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519)
            return out
        }
        #expect(publicKey == hex(Self.vectors[0].publicKey))
    }
}
