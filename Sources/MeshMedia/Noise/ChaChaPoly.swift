import COpenSSL
import Cryptography

/// ChaCha20-Poly1305 (RFC 8439) through OpenSSL 3 EVP, with Noise's nonce: 4 zero bytes ‖ counter (LE UInt64).
enum ChaChaPoly {
    static let keyCount = 32
    static let tagCount = 16

    static func nonce(_ counter: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { out[4 + i] = UInt8((counter >> UInt64(8 * i)) & 0xff) }
        return out
    }

    /// ciphertext ‖ tag.
    static func seal(key: SecretBytes, counter: UInt64, associatedData: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
        try run(encrypt: true, key: key, counter: counter, associatedData: associatedData, input: plaintext, tag: nil)
    }

    /// The plaintext, or `NoiseError.authenticationFailed`.
    static func open(key: SecretBytes, counter: UInt64, associatedData: [UInt8], ciphertext: ArraySlice<UInt8>) throws -> [UInt8] {
        guard ciphertext.count >= tagCount else { throw NoiseError.authenticationFailed }
        let body = Array(ciphertext.dropLast(tagCount))
        let tag = Array(ciphertext.suffix(tagCount))
        return try run(encrypt: false, key: key, counter: counter, associatedData: associatedData, input: body, tag: tag)
    }

    private static func run(encrypt: Bool, key: SecretBytes, counter: UInt64, associatedData: [UInt8], input: [UInt8], tag: [UInt8]?) throws -> [UInt8] {
        guard key.count == keyCount else { throw NoiseError.badKey }
        guard input.count < Int(Int32.max) - 64, associatedData.count < Int(Int32.max) else { throw NoiseError.messageTooLarge }
        guard let context = EVP_CIPHER_CTX_new() else { throw NoiseError.cryptoFailure }
        defer { EVP_CIPHER_CTX_free(context) }
        let nonce = nonce(counter)
        var outLength: Int32 = 0
        let initOK = key.withBytes { raw -> Int32 in
            let keyPointer = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return encrypt ? EVP_EncryptInit_ex(context, EVP_chacha20_poly1305(), nil, keyPointer, nonce)
                           : EVP_DecryptInit_ex(context, EVP_chacha20_poly1305(), nil, keyPointer, nonce)
        }
        guard initOK == 1 else { ERR_clear_error(); throw NoiseError.cryptoFailure }
        let update = encrypt ? EVP_EncryptUpdate : EVP_DecryptUpdate
        if !associatedData.isEmpty {
            guard update(context, nil, &outLength, associatedData, Int32(associatedData.count)) == 1 else {
                ERR_clear_error(); throw NoiseError.cryptoFailure
            }
        }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var produced = 0
        if !input.isEmpty {
            let ok = output.withUnsafeMutableBufferPointer { out in update(context, out.baseAddress, &outLength, input, Int32(input.count)) }
            guard ok == 1 else { ERR_clear_error(); throw NoiseError.cryptoFailure }
            produced = Int(outLength)
        }
        if var tag {
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagCount), &tag) == 1 else {
                ERR_clear_error(); throw NoiseError.cryptoFailure
            }
        }
        let finalOK = output.withUnsafeMutableBufferPointer { out in
            (encrypt ? EVP_EncryptFinal_ex : EVP_DecryptFinal_ex)(context, out.baseAddress! + produced, &outLength)
        }
        guard finalOK == 1 else {
            ERR_clear_error()
            output.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            throw encrypt ? NoiseError.cryptoFailure : NoiseError.authenticationFailed
        }
        produced += Int(outLength)
        output.removeLast(output.count - produced)
        if encrypt {
            var tagOut = [UInt8](repeating: 0, count: tagCount)
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagCount), &tagOut) == 1 else {
                ERR_clear_error(); throw NoiseError.cryptoFailure
            }
            output += tagOut
        }
        return output
    }
}
