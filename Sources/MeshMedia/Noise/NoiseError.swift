/// Why a Noise handshake or transport step failed; fixed words, never key material.
package enum NoiseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key of the wrong size, or a low-order X25519 point.
    case badKey
    /// A ciphertext failed authentication (tampered, wrong key, wrong nonce).
    case authenticationFailed
    /// A message arrived that the handshake pattern does not expect now (wrong turn, already done).
    case unexpectedMessage
    /// A handshake or transport message is shorter than its fixed parts.
    case truncated
    /// A transport nonce was seen before or lies outside the 1,024-message replay window.
    case replayed
    /// A message exceeds its size budget.
    case messageTooLarge
    /// The 32-bit transport nonce space is spent; the session must be rekeyed.
    case nonceExhausted
    /// Serialized session state is malformed.
    case badState
    /// OpenSSL failed for a reason other than the input.
    case cryptoFailure

    package var description: String {
        switch self {
        case .badKey: return "bad-key"
        case .authenticationFailed: return "authentication-failed"
        case .unexpectedMessage: return "unexpected-message"
        case .truncated: return "truncated"
        case .replayed: return "replayed"
        case .messageTooLarge: return "message-too-large"
        case .nonceExhausted: return "nonce-exhausted"
        case .badState: return "bad-state"
        case .cryptoFailure: return "crypto-failure"
        }
    }
}
