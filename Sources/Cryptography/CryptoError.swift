/// Why a cryptographic operation failed. Messages never include key material or inputs.
package enum CryptoError: Error, Equatable, CustomStringConvertible {
    /// The system random source failed; nothing weaker is used instead.
    case randomUnavailable
    /// A key had the wrong length or was not a valid point/scalar for its curve.
    case invalidKey(String)
    /// Authenticated decryption failed: ciphertext, nonce, tag or associated data were altered, or the key is wrong.
    case authenticationFailed
    /// A signature did not verify, or could not be parsed.
    case invalidSignature
    /// A token names a signing algorithm the verifier does not accept (always so for `none`).
    case disallowedAlgorithm
    /// Input that is not in the expected encoding (base64url, hex, PEM, JSON…).
    case malformedInput(String)
    /// An OpenSSL or libsecp256k1 call failed unexpectedly; carries the function name only.
    case library(String)

    package var description: String {
        switch self {
        case .randomUnavailable: return "the system random source is unavailable"
        case .invalidKey(let why): return "invalid key: \(why)"
        case .authenticationFailed: return "authentication failed: the data was altered or the key is wrong"
        case .invalidSignature: return "the signature does not verify"
        case .disallowedAlgorithm: return "the token's signing algorithm is not allowed"
        case .malformedInput(let why): return "malformed input: \(why)"
        case .library(let function): return "cryptographic library call failed: \(function)"
        }
    }
}
