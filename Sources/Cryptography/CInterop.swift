import COpenSSL

// Small helpers shared by the OpenSSL and libsecp256k1 wrappers. Internal only.

extension Array where Element == UInt8 {
    /// Lends a non-null pointer to the bytes even when the array is empty.
    ///
    /// Several C entry points treat a NULL data pointer as an error even with a zero length;
    /// an empty Swift array may have no storage, so a one-byte dummy stands in for it.
    func withNonNullBytes<R>(_ body: (UnsafePointer<UInt8>, Int) throws -> R) rethrows -> R {
        if isEmpty {
            var dummy: UInt8 = 0
            return try body(&dummy, 0)
        }
        return try withUnsafeBufferPointer { try body($0.baseAddress!, $0.count) }
    }
}

extension SecretBytes {
    /// Lends the secret as a non-null `UInt8` pointer plus count (see `withNonNullBytes`).
    func withNonNullBytes<R>(_ body: (UnsafePointer<UInt8>, Int) throws -> R) rethrows -> R {
        try withBytes { raw in
            if raw.count == 0 {
                var dummy: UInt8 = 0
                return try body(&dummy, 0)
            }
            return try body(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), raw.count)
        }
    }
}

/// Throws `CryptoError.library(function)` when an OpenSSL call did not return 1,
/// after emptying this thread's OpenSSL error queue so stale entries cannot leak into later calls.
func requireOpenSSL(_ result: Int32, _ function: String) throws {
    guard result == 1 else { throw libraryFailure(function) }
}

/// `CryptoError.library(function)`, after emptying this thread's OpenSSL error queue.
func libraryFailure(_ function: String) -> CryptoError {
    ERR_clear_error()
    return CryptoError.library(function)
}

/// Wipes an array in place with `OPENSSL_cleanse`, for temporaries that held secret bytes.
func cleanse(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { raw in
        if let base = raw.baseAddress { OPENSSL_cleanse(base, raw.count) }
    }
}

/// Owns one `EVP_PKEY *` and frees it when the last reference goes away.
final class EVPKey: @unchecked Sendable {
    // @unchecked: the pointer is never mutated after init; OpenSSL allows concurrent
    // signing/verification with one EVP_PKEY as long as each call uses its own EVP_MD_CTX.
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }
}
