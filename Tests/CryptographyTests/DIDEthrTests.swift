import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct DIDEthrTests {
    @Test func endorsersTestIdentityDerivesItsDID() throws {
        // docs/protocols/jwt-pool.md, test vector 3
        let key = try Secp256k1PrivateKey(rawRepresentation: SecretBytes(hex("2b6472c026ec2aa2c4235c994a63868fc9212d18b58f6cbfe861b52e71330f5b")))
        #expect(DIDEthr.did(for: key) == "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F")
    }

    @Test func theReferenceSignerDerivesAChecksummedDID() throws {
        let key = try Secp256k1PrivateKey(rawRepresentation: SecretBytes(hex("278a5de700e29faae8e40e366ec5012b5ec63d36ec77e8a2417154cc1d25383f")))
        let did = DIDEthr.did(for: key)
        #expect(did.lowercased() == "did:ethr:0xf3beac30c498d9e26865f34fcaa57dbb935b0d74")
        #expect(DIDEthr.address(fromDID: did) == hex("f3beac30c498d9e26865f34fcaa57dbb935b0d74"))
    }

    @Test func addressParsingIgnoresHexCase() {
        let expected = hex("0000694b58c2cc69658993a90d3840c560f2f51f")
        #expect(DIDEthr.address(fromDID: "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F") == expected)
        #expect(DIDEthr.address(fromDID: "did:ethr:0x0000694b58c2cc69658993a90d3840c560f2f51f") == expected)
        #expect(DIDEthr.address(fromDID: "did:ethr:0x0000694B58C2CC69658993A90D3840C560F2F51F") == expected)
    }

    @Test func otherShapesAreNotDIDEthrAddresses() {
        for did in [
            "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51",    // 39 digits
            "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51F0",  // 41 digits
            "did:ethr:0x0000694B58C2cC69658993A90D3840C560f2F51G",   // not hex
            "did:ethr:mainnet:0x0000694B58C2cC69658993A90D3840C560f2F51F",
            "did:key:0x0000694B58C2cC69658993A90D3840C560f2F51F",
            "did:ethr:0000694B58C2cC69658993A90D3840C560f2F51F00",    // no 0x
            "", "did:ethr:0x",
        ] {
            #expect(DIDEthr.address(fromDID: did) == nil, "\(did)")
        }
    }
}
