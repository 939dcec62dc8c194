import Cryptography

/// Noise CipherState: a key (or none yet) and the 64-bit message counter used as the AEAD nonce.
struct CipherState {
    var key: SecretBytes?
    var nonce: UInt64 = 0

    mutating func encryptWithAd(_ ad: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < UInt64.max else { throw NoiseError.nonceExhausted }
        let out = try ChaChaPoly.seal(key: key, counter: nonce, associatedData: ad, plaintext: plaintext)
        nonce += 1
        return out
    }

    mutating func decryptWithAd(_ ad: [UInt8], _ ciphertext: ArraySlice<UInt8>) throws -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard nonce < UInt64.max else { throw NoiseError.nonceExhausted }
        let out = try ChaChaPoly.open(key: key, counter: nonce, associatedData: ad, ciphertext: ciphertext)
        nonce += 1
        return out
    }
}

/// Noise SymmetricState over SHA-256: the chaining key, the handshake hash and the current cipher.
struct SymmetricState {
    var chainingKey: SecretBytes
    var handshakeHash: [UInt8]
    var cipher = CipherState()

    /// InitializeSymmetric: a name of at most 32 bytes is zero-padded, a longer one hashed.
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        let h = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : SHA256.hash(name)
        handshakeHash = h
        chainingKey = SecretBytes(h)
    }

    init(chainingKey: SecretBytes, handshakeHash: [UInt8], cipher: CipherState) {
        self.chainingKey = chainingKey
        self.handshakeHash = handshakeHash
        self.cipher = cipher
    }

    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = SHA256.hash(handshakeHash + data)
    }

    mutating func mixKey(_ inputKeyMaterial: SecretBytes) {
        let (ck, k) = Self.hkdf2(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial)
        chainingKey = ck
        cipher = CipherState(key: k, nonce: 0)
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encryptWithAd(handshakeHash, plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: ArraySlice<UInt8>) throws -> [UInt8] {
        let plaintext = try cipher.decryptWithAd(handshakeHash, ciphertext)
        mixHash(Array(ciphertext))
        return plaintext
    }

    /// Split: the initiator-to-responder and responder-to-initiator keys.
    func split() -> (SecretBytes, SecretBytes) {
        Self.hkdf2(chainingKey: chainingKey, inputKeyMaterial: SecretBytes([]))
    }

    /// Noise's HKDF with two outputs: temp = HMAC(ck, ikm); out1 = HMAC(temp, 0x01); out2 = HMAC(temp, out1 ‖ 0x02).
    static func hkdf2(chainingKey: SecretBytes, inputKeyMaterial: SecretBytes) -> (SecretBytes, SecretBytes) {
        let temp = SecretBytes(HMACSHA256.authenticate(key: chainingKey, message: inputKeyMaterial.copyBytes()))
        let out1 = HMACSHA256.authenticate(key: temp, message: [0x01])
        let out2 = HMACSHA256.authenticate(key: temp, message: out1 + [0x02])
        return (SecretBytes(out1), SecretBytes(out2))
    }
}
