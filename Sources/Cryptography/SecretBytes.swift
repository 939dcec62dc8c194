import COpenSSL

/// Key material or another secret held in memory: redacts itself when printed and is zeroed when freed.
///
/// `description`, `debugDescription` and reflection never show the bytes, so a secret that reaches a
/// log line or an error message by mistake prints as `<redacted N bytes>`. The storage is wiped with
/// `OPENSSL_cleanse` (which the optimiser cannot elide) when the last reference goes away.
package final class SecretBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable, @unchecked Sendable {
    // @unchecked: `storage` is written only by init and wiped by deinit, when no other reference can exist.
    private var storage: [UInt8]

    /// Takes ownership of `bytes`; callers should drop their own copy.
    package init(_ bytes: [UInt8]) {
        storage = bytes
    }

    /// `count` fresh random bytes from `RAND_bytes`.
    package static func random(count: Int) throws -> SecretBytes {
        SecretBytes(try SecureRandom.bytes(count: count))
    }

    deinit {
        storage.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { OPENSSL_cleanse(base, raw.count) }
        }
    }

    /// Number of secret bytes.
    package var count: Int { storage.count }

    /// Lends the bytes for the duration of `body`; do not let them escape.
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes(body)
    }

    /// A copy of the bytes, for APIs that need an array. Prefer `withBytes`.
    package func copyBytes() -> [UInt8] { storage }

    /// Constant-time equality (`CRYPTO_memcmp`); different lengths compare unequal.
    package func constantTimeEquals(_ other: SecretBytes) -> Bool {
        other.withBytes { ConstantTime.equals(storage, Array($0)) }
    }

    package var description: String { "<redacted \(storage.count) bytes>" }
    package var debugDescription: String { description }
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
