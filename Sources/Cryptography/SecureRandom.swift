import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's `RAND_bytes`.
///
/// A failure throws `CryptoError.randomUnavailable`; there is deliberately no weaker fallback.
package enum SecureRandom {
    /// `count` random bytes.
    package static func bytes(count: Int) throws -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        var out = [UInt8](repeating: 0, count: count)
        if count == 0 { return out }
        let ok = out.withUnsafeMutableBytes { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        guard ok == 1 else { throw CryptoError.randomUnavailable }
        return out
    }

    /// A uniformly random integer in `0..<upperBound` (rejection sampling, no modulo bias).
    package static func uniform(below upperBound: UInt64) throws -> UInt64 {
        precondition(upperBound > 0)
        let limit = UInt64.max - (UInt64.max % upperBound)
        while true {
            let raw = try bytes(count: 8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if raw < limit { return raw % upperBound }
        }
    }
}
