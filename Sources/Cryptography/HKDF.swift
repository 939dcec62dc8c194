import COpenSSL

/// HKDF-SHA256 key derivation (RFC 5869) through OpenSSL's `EVP_KDF` "HKDF".
package enum HKDF {
    /// Derives `outputCount` bytes (1…8160) from `inputKey`, with extract-then-expand.
    ///
    /// `salt` may be empty (RFC 5869 then uses a zero-filled salt); `info` separates derived keys by purpose.
    package static func deriveKey(inputKey: SecretBytes, salt: [UInt8], info: [UInt8], outputCount: Int) throws -> SecretBytes {
        guard inputKey.count > 0 else { throw CryptoError.invalidKey("HKDF input key is empty") }
        guard outputCount > 0, outputCount <= 255 * 32 else {
            throw CryptoError.malformedInput("HKDF-SHA256 output length must be 1...8160 bytes")
        }
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { throw libraryFailure("EVP_KDF_fetch") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { throw libraryFailure("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(context) }

        var output = [UInt8](repeating: 0, count: outputCount)
        // OSSL_PARAM stores raw pointers to its key names and values, so every string and buffer
        // is kept alive by the enclosing closures until EVP_KDF_derive has returned.
        let result: Int32 = "digest".withCString { digestKey in
            "SHA256".withCString { digestName in
                "key".withCString { keyKey in
                    "salt".withCString { saltKey in
                        "info".withCString { infoKey in
                            inputKey.withNonNullBytes { keyBytes, keyCount in
                                salt.withNonNullBytes { saltBytes, saltCount in
                                    info.withNonNullBytes { infoBytes, infoCount in
                                        var params = [
                                            OSSL_PARAM_construct_utf8_string(digestKey, UnsafeMutablePointer(mutating: digestName), 0),
                                            OSSL_PARAM_construct_octet_string(keyKey, UnsafeMutableRawPointer(mutating: keyBytes), keyCount),
                                        ]
                                        // An absent salt or info is the RFC's empty value.
                                        if saltCount > 0 {
                                            params.append(OSSL_PARAM_construct_octet_string(saltKey, UnsafeMutableRawPointer(mutating: saltBytes), saltCount))
                                        }
                                        if infoCount > 0 {
                                            params.append(OSSL_PARAM_construct_octet_string(infoKey, UnsafeMutableRawPointer(mutating: infoBytes), infoCount))
                                        }
                                        params.append(OSSL_PARAM_construct_end())
                                        return output.withUnsafeMutableBufferPointer { out in
                                            EVP_KDF_derive(context, out.baseAddress, outputCount, &params)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard result == 1 else {
            cleanse(&output)
            throw libraryFailure("EVP_KDF_derive")
        }
        return SecretBytes(output)
    }
}
