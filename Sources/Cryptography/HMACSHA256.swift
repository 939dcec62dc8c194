import COpenSSL

/// HMAC-SHA256 (RFC 2104) message authentication through OpenSSL.
public enum HMACSHA256 {
    /// Length of a MAC in bytes.
    public static let macCount = 32

    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func authenticate(key: SecretBytes, message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: macCount)
        var macLength: UInt32 = 0
        let result = key.withNonNullBytes { keyPointer, keyCount in
            message.withNonNullBytes { messagePointer, messageCount in
                mac.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha256(), keyPointer, Int32(keyCount), messagePointer, messageCount, out.baseAddress, &macLength)
                }
            }
        }
        // HMAC fails only on allocation failure for a built-in digest.
        precondition(result != nil && macLength == UInt32(macCount), "HMAC(SHA-256) failed")
        return mac
    }

    /// Whether `mac` is the HMAC-SHA256 of `message` under `key`, compared in constant time.
    public static func isValid(_ mac: [UInt8], key: SecretBytes, message: [UInt8]) -> Bool {
        ConstantTime.equals(authenticate(key: key, message: message), mac)
    }
}
