import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL.
package enum SHA256 {
    /// Length of a digest in bytes.
    package static let digestCount = 32

    /// The 32-byte SHA-256 digest of `bytes`.
    package static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: digestCount)
        let ok = bytes.withNonNullBytes { input, count in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(input, count, out.baseAddress, nil, EVP_sha256(), nil)
            }
        }
        // EVP_Digest with a built-in digest fails only if memory allocation fails.
        precondition(ok == 1, "EVP_Digest(SHA-256) failed")
        return digest
    }
}
