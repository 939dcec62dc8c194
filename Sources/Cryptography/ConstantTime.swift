import COpenSSL

/// Comparisons whose running time does not depend on where the inputs differ.
package enum ConstantTime {
    /// `CRYPTO_memcmp` over equal-length inputs; inputs of different lengths are unequal
    /// (the length itself is not secret in any use here: MACs and tags have fixed sizes).
    package static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress!, pb.baseAddress!, a.count) == 0 } }
    }
}
