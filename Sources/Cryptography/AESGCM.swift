import COpenSSL

/// AES-256-GCM authenticated encryption through OpenSSL, with a fresh random 96-bit nonce per message.
///
/// The sealed form is `nonce (12) ‖ ciphertext ‖ tag (16)`. Random nonces are safe for up to about
/// 2^32 messages under one key (NIST SP 800-38D §8.3).
package enum AESGCM {
    /// Key length in bytes (AES-256).
    package static let keyCount = 32
    /// Nonce length in bytes (96 bits).
    package static let nonceCount = 12
    /// Authentication tag length in bytes (128 bits).
    package static let tagCount = 16

    /// Encrypts and authenticates `plaintext`, binding `associatedData`; returns nonce ‖ ciphertext ‖ tag.
    package static func seal(_ plaintext: [UInt8], key: SecretBytes, associatedData: [UInt8] = []) throws -> [UInt8] {
        let nonce = try SecureRandom.bytes(count: nonceCount)
        let (ciphertext, tag) = try seal(plaintext, key: key, nonce: nonce, associatedData: associatedData)
        return nonce + ciphertext + tag
    }

    /// Checks and decrypts `combined` (nonce ‖ ciphertext ‖ tag) sealed with `key` and the same `associatedData`.
    ///
    /// Throws `CryptoError.authenticationFailed` if anything was altered or the key or associated data
    /// differ, and `CryptoError.malformedInput` if `combined` is shorter than a nonce plus a tag.
    package static func open(_ combined: [UInt8], key: SecretBytes, associatedData: [UInt8] = []) throws -> [UInt8] {
        guard combined.count >= nonceCount + tagCount else {
            throw CryptoError.malformedInput("sealed data is shorter than a nonce and a tag")
        }
        let nonce = Array(combined[..<nonceCount])
        let ciphertext = Array(combined[nonceCount..<(combined.count - tagCount)])
        let tag = Array(combined[(combined.count - tagCount)...])
        return try open(ciphertext: ciphertext, tag: tag, key: key, nonce: nonce, associatedData: associatedData)
    }

    /// Explicit-nonce encryption, for known-answer tests only: a repeated nonce under one key breaks GCM.
    static func seal(_ plaintext: [UInt8], key: SecretBytes, nonce: [UInt8], associatedData: [UInt8]) throws -> (ciphertext: [UInt8], tag: [UInt8]) {
        try checkSizes(key: key, nonce: nonce)
        try checkLengths(plaintext.count, associatedData.count)
        guard let context = EVP_CIPHER_CTX_new() else { throw libraryFailure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }  // also wipes the expanded key schedule

        // The default GCM IV length is 12 bytes, which is what checkSizes enforces.
        try key.withNonNullBytes { keyBytes, _ in
            try nonce.withNonNullBytes { nonceBytes, _ in
                try requireOpenSSL(EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, keyBytes, nonceBytes), "EVP_EncryptInit_ex")
            }
        }
        var outLength: Int32 = 0
        if !associatedData.isEmpty {
            // A NULL output buffer makes EVP_EncryptUpdate consume associated data.
            try associatedData.withNonNullBytes { aad, count in
                try requireOpenSSL(EVP_EncryptUpdate(context, nil, &outLength, aad, Int32(count)), "EVP_EncryptUpdate(aad)")
            }
        }
        // GCM is a stream mode: ciphertext length equals plaintext length, Final writes nothing.
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        if !plaintext.isEmpty {
            try plaintext.withNonNullBytes { input, count in
                try ciphertext.withUnsafeMutableBufferPointer { out in
                    try requireOpenSSL(EVP_EncryptUpdate(context, out.baseAddress, &outLength, input, Int32(count)), "EVP_EncryptUpdate")
                }
            }
        }
        var finalBlock = [UInt8](repeating: 0, count: 16)
        try finalBlock.withUnsafeMutableBufferPointer { out in
            try requireOpenSSL(EVP_EncryptFinal_ex(context, out.baseAddress, &outLength), "EVP_EncryptFinal_ex")
        }
        var tag = [UInt8](repeating: 0, count: tagCount)
        try tag.withUnsafeMutableBytes { out in
            try requireOpenSSL(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagCount), out.baseAddress), "EVP_CTRL_GCM_GET_TAG")
        }
        return (ciphertext, tag)
    }

    /// Explicit-nonce decryption, the counterpart of `seal(_:key:nonce:associatedData:)`.
    static func open(ciphertext: [UInt8], tag: [UInt8], key: SecretBytes, nonce: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        try checkSizes(key: key, nonce: nonce)
        guard tag.count == tagCount else { throw CryptoError.malformedInput("GCM tag must be 16 bytes") }
        try checkLengths(ciphertext.count, associatedData.count)
        guard let context = EVP_CIPHER_CTX_new() else { throw libraryFailure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }

        try key.withNonNullBytes { keyBytes, _ in
            try nonce.withNonNullBytes { nonceBytes, _ in
                try requireOpenSSL(EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, keyBytes, nonceBytes), "EVP_DecryptInit_ex")
            }
        }
        var outLength: Int32 = 0
        if !associatedData.isEmpty {
            try associatedData.withNonNullBytes { aad, count in
                try requireOpenSSL(EVP_DecryptUpdate(context, nil, &outLength, aad, Int32(count)), "EVP_DecryptUpdate(aad)")
            }
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        if !ciphertext.isEmpty {
            try ciphertext.withNonNullBytes { input, count in
                try plaintext.withUnsafeMutableBufferPointer { out in
                    try requireOpenSSL(EVP_DecryptUpdate(context, out.baseAddress, &outLength, input, Int32(count)), "EVP_DecryptUpdate")
                }
            }
        }
        var expectedTag = tag
        try expectedTag.withUnsafeMutableBytes { raw in
            try requireOpenSSL(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagCount), raw.baseAddress), "EVP_CTRL_GCM_SET_TAG")
        }
        // DecryptFinal compares the computed tag with the expected one (in constant time).
        var finalBlock = [UInt8](repeating: 0, count: 16)
        let verified = finalBlock.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(context, out.baseAddress, &outLength)
        }
        guard verified == 1 else {
            ERR_clear_error()
            cleanse(&plaintext)  // never hand out, or leave behind, unauthenticated plaintext
            throw CryptoError.authenticationFailed
        }
        return plaintext
    }

    /// OpenSSL's EVP update calls take an `int` length; nothing sealed here comes near it.
    private static func checkLengths(_ counts: Int...) throws {
        guard counts.allSatisfy({ $0 <= Int(Int32.max) }) else { throw CryptoError.malformedInput("input too large for one GCM message") }
    }

    private static func checkSizes(key: SecretBytes, nonce: [UInt8]) throws {
        guard key.count == keyCount else { throw CryptoError.invalidKey("AES-256-GCM needs a 32-byte key") }
        guard nonce.count == nonceCount else { throw CryptoError.malformedInput("GCM nonce must be 12 bytes") }
    }
}
