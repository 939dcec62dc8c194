/// Keccak-256 as Ethereum uses it: the original Keccak padding (0x01), not NIST SHA3-256's (0x06).
///
/// Written in Swift because OpenSSL 3.0 offers no Keccak-256 digest that can be relied on.
package enum Keccak256 {
    /// Length of a digest in bytes.
    package static let digestCount = 32

    /// Rate of Keccak-256 in bytes: (1600 − 2·256) / 8.
    private static let rate = 136

    private static let roundConstants: [UInt64] = [
        0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
        0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
        0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
        0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
        0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
        0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
    ]

    /// Rotation offsets r[x + 5y] of the ρ step.
    private static let rotations: [UInt64] = [
        0, 1, 62, 28, 27,
        36, 44, 6, 55, 20,
        3, 10, 43, 25, 39,
        41, 45, 15, 21, 8,
        18, 2, 61, 56, 14,
    ]

    /// The 32-byte Keccak-256 digest of `bytes`.
    package static func hash(_ bytes: [UInt8]) -> [UInt8] {
        sponge(bytes, domainPadding: 0x01)
    }

    /// The Keccak[512] sponge with a 32-byte output; `domainPadding` is 0x01 for Keccak-256 and
    /// 0x06 for SHA3-256 (the latter only so tests can check the permutation against OpenSSL's SHA3).
    static func sponge(_ bytes: [UInt8], domainPadding: UInt8) -> [UInt8] {
        var state = [UInt64](repeating: 0, count: 25)
        // Pad: message ‖ domain byte ‖ 0x00… ‖ 0x80 (the two may share one byte) to a multiple of the rate.
        var padded = bytes
        padded.append(domainPadding)
        while padded.count % rate != 0 { padded.append(0x00) }
        padded[padded.count - 1] |= 0x80

        var offset = 0
        while offset < padded.count {
            for lane in 0..<(rate / 8) {
                var word: UInt64 = 0
                for byte in 0..<8 { word |= UInt64(padded[offset + lane * 8 + byte]) << (8 * UInt64(byte)) }
                state[lane] ^= word
            }
            permute(&state)
            offset += rate
        }
        var digest = [UInt8]()
        digest.reserveCapacity(digestCount)
        for lane in 0..<4 {
            for byte in 0..<8 { digest.append(UInt8(truncatingIfNeeded: state[lane] >> (8 * UInt64(byte)))) }
        }
        return digest
    }

    /// Keccak-f[1600]: 24 rounds of θ, ρ, π, χ, ι over the 5×5 lane state (index x + 5y).
    private static func permute(_ a: inout [UInt64]) {
        var c = [UInt64](repeating: 0, count: 5)
        var b = [UInt64](repeating: 0, count: 25)
        for round in 0..<24 {
            // θ
            for x in 0..<5 { c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] }
            for x in 0..<5 {
                let d = c[(x + 4) % 5] ^ rotateLeft(c[(x + 1) % 5], 1)
                for y in 0..<5 { a[x + 5 * y] ^= d }
            }
            // ρ and π: B[y, 2x + 3y] = rot(A[x, y], r[x, y])
            for x in 0..<5 {
                for y in 0..<5 {
                    b[y + 5 * ((2 * x + 3 * y) % 5)] = rotateLeft(a[x + 5 * y], rotations[x + 5 * y])
                }
            }
            // χ
            for y in 0..<5 {
                for x in 0..<5 {
                    a[x + 5 * y] = b[x + 5 * y] ^ (~b[(x + 1) % 5 + 5 * y] & b[(x + 2) % 5 + 5 * y])
                }
            }
            // ι
            a[0] ^= roundConstants[round]
        }
    }

    @inline(__always)
    private static func rotateLeft(_ value: UInt64, _ count: UInt64) -> UInt64 {
        count == 0 ? value : (value << count) | (value >> (64 - count))
    }
}
