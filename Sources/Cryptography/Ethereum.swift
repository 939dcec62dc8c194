/// Ethereum account addresses: derivation from a secp256k1 public key and EIP-55 checksum spelling.
package enum Ethereum {
    /// The 20-byte address of an uncompressed secp256k1 public key: the last 20 bytes of
    /// Keccak-256 over the 64-byte X ‖ Y (the key without its 0x04 prefix).
    ///
    /// Accepts the 65-byte SEC1 form (`0x04 ‖ X ‖ Y`, as `Secp256k1PrivateKey.publicKey(compressed: false)`
    /// and `Secp256k1.recoverPublicKeys` return it) or the bare 64-byte X ‖ Y.
    package static func address(uncompressedPublicKey: [UInt8]) throws -> [UInt8] {
        let coordinates: ArraySlice<UInt8>
        switch uncompressedPublicKey.count {
        case 65 where uncompressedPublicKey[0] == 0x04: coordinates = uncompressedPublicKey[1...]
        case 64: coordinates = uncompressedPublicKey[...]
        default: throw CryptoError.invalidKey("an Ethereum address needs an uncompressed secp256k1 public key")
        }
        return Array(Keccak256.hash(Array(coordinates)).suffix(20))
    }

    /// The EIP-55 mixed-case checksum spelling of a 20-byte address, with its `0x` prefix.
    ///
    /// A hex letter is upper case when the matching nibble of Keccak-256(lowercase hex) is 8 or more.
    package static func checksumAddress(_ address: [UInt8]) throws -> String {
        guard address.count == 20 else { throw CryptoError.malformedInput("an Ethereum address is 20 bytes") }
        let lower = Array(Hex.encode(address).utf8)
        let hash = Keccak256.hash(lower)
        var out = Array("0x".utf8)
        for (index, c) in lower.enumerated() {
            let nibble = index % 2 == 0 ? hash[index / 2] >> 4 : hash[index / 2] & 0x0f
            if c >= UInt8(ascii: "a") && nibble >= 8 {
                out.append(c - 32)  // ASCII upper case
            } else {
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
