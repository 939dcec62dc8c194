import Cryptography
@testable import Grants
import Testing

/// The HMAC proof against the reference vector (reference `grants.md`, RFC 8032 test keys 1 and 2).
@Suite(.timeLimit(.minutes(15))) struct ProofVectorTests {
    let secret = SecretBytes(hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"))
    let challenge = hex("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f")
    let alice = try! EndpointID(bytes: hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
    let bob = try! EndpointID(bytes: hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"))

    @Test func theProofMatchesTheReferenceVector() {
        let proof = GrantProof.prove(secret: secret, challenge: challenge, issuer: alice, holder: bob)
        #expect(Hex.encode(proof) == "c3edcf95b4031f1a997e575dc3a7b7ab28f2872848f1ed882790b72e53ee2c7c")
        #expect(GrantProof.isValid(proof, secret: secret, challenge: challenge, issuer: alice, holder: bob))
    }

    @Test func aProofWithTheEndpointIdsSwappedIsTheReferenceValueAndIsRefused() {
        let swapped = GrantProof.prove(secret: secret, challenge: challenge, issuer: bob, holder: alice)
        #expect(Hex.encode(swapped) == "1561635cdec7598d16064a626cad4ec6c707ee75e07d81a8ec3a8e155c3894d9")
        #expect(!GrantProof.isValid(swapped, secret: secret, challenge: challenge, issuer: alice, holder: bob))
    }

    @Test func theMessageIsLabelChallengeIssuerHolderInThatOrder() {
        let message = GrantProof.message(challenge: challenge, issuer: alice, holder: bob)
        #expect(message.count == 16 + 32 + 32 + 32)
        #expect(Array(message.prefix(16)) == Array("vnidrop-grant-v1".utf8))
        #expect(Array(message[16..<48]) == challenge)
        #expect(Array(message[48..<80]) == alice.bytes)
        #expect(Array(message[80..<112]) == bob.bytes)
    }

    @Test func aProofForAnotherChallengeOrATruncatedProofIsRefused() {
        let proof = GrantProof.prove(secret: secret, challenge: challenge, issuer: alice, holder: bob)
        var other = challenge
        other[0] ^= 1
        #expect(!GrantProof.isValid(proof, secret: secret, challenge: other, issuer: alice, holder: bob))
        #expect(!GrantProof.isValid(Array(proof.prefix(31)), secret: secret, challenge: challenge, issuer: alice, holder: bob))
        #expect(!GrantProof.isValid([], secret: secret, challenge: challenge, issuer: alice, holder: bob))
    }

    @Test func theFingerprintIsTheFirstEightBytesOfTheSHA256OfTheIdInFourGroups() {
        let digest = Hex.encode(SHA256.hash(alice.bytes))
        let expected = [0, 4, 8, 12].map { offset -> String in
            let start = digest.index(digest.startIndex, offsetBy: offset)
            return String(digest[start..<digest.index(start, offsetBy: 4)])
        }.joined(separator: "-")
        #expect(alice.fingerprint == expected)
        #expect(alice.fingerprint.count == 19)
    }
}
