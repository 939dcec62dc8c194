import COpenSSL

/// HMAC-SHA256 (RFC 2104) message authentication through OpenSSL.
package enum HMACSHA256 {
    /// Length of a MAC in bytes.
    package static let macCount = 32

    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    package static func authenticate(key: SecretBytes, message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: macCount)
        var macLength = 0
        let ok = key.withNonNullBytes { keyBytes, keyCount in
            message.withNonNullBytes { messageBytes, messageCount in
                mac.withUnsafeMutableBufferPointer { out in
                    HMACImplementation.shared.compute(key: keyBytes, keyCount: keyCount, message: messageBytes,
                                                      messageCount: messageCount, into: out.baseAddress!, written: &macLength)
                }
            }
        }
        // Only allocation failure can make HMAC-SHA256 fail in the default provider.
        precondition(ok && macLength == macCount, "HMAC-SHA256 failed")
        return mac
    }

    /// Whether `mac` is the HMAC-SHA256 of `message` under `key`, compared in constant time.
    package static func isValid(_ mac: [UInt8], key: SecretBytes, message: [UInt8]) -> Bool {
        ConstantTime.equals(authenticate(key: key, message: message), mac)
    }
}

/// An unkeyed HMAC-SHA256 `EVP_MAC_CTX` prepared once per process, duplicated for each MAC.
///
/// The one-shot `HMAC()` fetches the HMAC implementation and SHA-256 on every call, which costs
/// several times the MAC itself on short messages. Here they are fetched and bound once; each call
/// duplicates the template (a memory copy) and keys its own copy.
private final class HMACImplementation: @unchecked Sendable {
    // @unchecked: the template is never keyed, updated or freed after init; EVP_MAC_CTX_dup only reads it,
    // and every call works on its own duplicate. It lives for the whole process.
    static let shared = HMACImplementation()

    private let template: OpaquePointer

    private init() {
        guard let mac = EVP_MAC_fetch(nil, "HMAC", nil) else { fatalError("OpenSSL default provider lacks HMAC") }
        defer { EVP_MAC_free(mac) }  // the context keeps its own reference
        guard let context = EVP_MAC_CTX_new(mac) else { fatalError("EVP_MAC_CTX_new failed") }
        // OSSL_PARAM keeps raw pointers: both strings must stay alive until EVP_MAC_CTX_set_params returns.
        let ok = "digest".withCString { name in
            "SHA256".withCString { value in
                var params = [
                    OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: value), 0),
                    OSSL_PARAM_construct_end(),
                ]
                return EVP_MAC_CTX_set_params(context, &params)
            }
        }
        guard ok == 1 else { fatalError("OpenSSL default provider lacks SHA-256 for HMAC") }
        template = context
    }

    func compute(key: UnsafePointer<UInt8>, keyCount: Int, message: UnsafePointer<UInt8>, messageCount: Int,
                 into out: UnsafeMutablePointer<UInt8>, written: inout Int) -> Bool {
        guard let context = EVP_MAC_CTX_dup(template) else { return false }
        defer { EVP_MAC_CTX_free(context) }  // also cleanses the keyed digest state
        guard EVP_MAC_init(context, key, keyCount, nil) == 1,
              EVP_MAC_update(context, message, messageCount) == 1,
              EVP_MAC_final(context, out, &written, HMACSHA256.macCount) == 1 else {
            ERR_clear_error()
            return false
        }
        return true
    }
}
