import COpenSSL
import Testing
@testable import Cryptography

@Suite(.timeLimit(.minutes(15))) struct Keccak256Tests {
    @Test func theEmptyMessageHashesToEthereumsKeccak256() {
        #expect(Keccak256.hash([]) == hex("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"))
    }

    @Test func abcHashesToEthereumsKeccak256() {
        #expect(Keccak256.hash(bytes("abc")) == hex("4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"))
    }

    @Test func keccakPaddingDiffersFromSHA3() {
        // SHA3-256("") (FIPS 202, padding 0x06) — must not be what Keccak-256 returns.
        #expect(Keccak256.hash([]) != hex("a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"))
    }

    @Test func quickBrownFoxHashesToTheKnownDigests() {
        #expect(Keccak256.hash(bytes("The quick brown fox jumps over the lazy dog"))
                == hex("4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15"))
        #expect(Keccak256.hash(bytes("The quick brown fox jumps over the lazy dog."))
                == hex("578951e24efd62a3d63a86f7cd19aaa53c898fe287d2552133220370240b572d"))
    }

    /// The same sponge with SHA3's 0x06 padding must agree with OpenSSL's SHA3-256 for every length
    /// up to three blocks: this checks the permutation, absorption and the rate-boundary padding
    /// (135 bytes shares the 0x81 byte; 136 needs a whole extra block) against an independent implementation.
    @Test func theSpongeMatchesOpenSSLSHA3AcrossBlockBoundaries() {
        for length in 0...(3 * 136 + 1) {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            var expected = [UInt8](repeating: 0, count: 32)
            let ok = message.withUnsafeBytes { input in
                expected.withUnsafeMutableBufferPointer { EVP_Digest(input.baseAddress, length, $0.baseAddress, nil, EVP_sha3_256(), nil) }
            }
            #expect(ok == 1)
            #expect(Keccak256.sponge(message, domainPadding: 0x06) == expected, "length \(length)")
        }
    }
}
