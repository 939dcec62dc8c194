/// `did:ethr` identifiers (the form did-jwt and Endorser use): `did:ethr:0x` + EIP-55 address.
package enum DIDEthr {
    private static let prefix = Array("did:ethr:0x".utf8)

    /// The `did:ethr:0x…` DID of `key`, with the address in its EIP-55 checksummed spelling.
    package static func did(for key: Secp256k1PrivateKey) -> String {
        // A valid private key always has a 65-byte uncompressed public key, so neither call can throw.
        let address = try! Ethereum.address(uncompressedPublicKey: key.publicKey(compressed: false))
        return "did:ethr:" + (try! Ethereum.checksumAddress(address))
    }

    /// The 20-byte address in `did:ethr:0x<40 hex>`, the hex in any case; nil for anything else
    /// (other DID methods, network-qualified `did:ethr:<network>:…` forms, wrong lengths, non-hex).
    ///
    /// Endorser compares addresses case-insensitively, so a mixed-case spelling is not checked against EIP-55.
    package static func address(fromDID did: String) -> [UInt8]? {
        let bytes = Array(did.utf8)
        guard bytes.count == prefix.count + 40, Array(bytes[..<prefix.count]) == prefix else { return nil }
        return try? Hex.decode(String(decoding: bytes[prefix.count...], as: UTF8.self))
    }
}
