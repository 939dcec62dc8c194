/// Which wire form one private-file send may use — the send rules of docs/protocols/mesh-wire.md as a pure function.
///
/// | situation | result |
/// |---|---|
/// | no stable Noise fingerprint (no verified announce) | blocked |
/// | this session's 0x21 has `privateMedia` | encrypted |
/// | this session's 0x21 lacks it, peer pinned | blocked (downgrade) |
/// | this session's 0x21 lacks it, not pinned | legacy with this send's consent, else blocked |
/// | no proof in time, pinned | blocked |
/// | no proof in time, not pinned | legacy with this send's consent, else blocked |
/// | announce has the bit or a pin, no proof yet | wait for proof (start a handshake) |
/// | otherwise | legacy with this send's consent, else blocked |
///
/// A pinned peer never gets the legacy form, whatever the consent; nothing ever chooses 0x09 or both forms.
enum SendDecision: Equatable {
    case encrypted
    case legacy
    case wait
    case blocked(Reason)

    enum Reason: String, Equatable {
        case noStableKey = "no-stable-key"
        case downgrade = "downgrade"
        case proofTimeout = "proof-timeout"
        case needsConsent = "needs-consent"
    }

    struct Inputs {
        /// A verified announce gave the peer a stable Noise key.
        var hasStableKey: Bool
        var pinned: Bool
        var announceHasPrivateMedia: Bool
        /// Capabilities from this session's authenticated peer state, if it arrived.
        var proof: Capabilities?
        /// The wait for proof ran out.
        var proofTimedOut: Bool
        /// `--accept-unencrypted` was given for this send.
        var consent: Bool
        /// The sender itself can speak the encrypted form (false for an emulated older client).
        var canEncrypt: Bool = true
    }

    static func decide(_ inputs: Inputs) -> SendDecision {
        guard inputs.hasStableKey else { return .blocked(.noStableKey) }
        let fallback: SendDecision = inputs.consent ? .legacy : .blocked(.needsConsent)
        guard inputs.canEncrypt else { return inputs.pinned ? .blocked(.downgrade) : fallback }
        if let proof = inputs.proof {
            if proof.contains(.privateMedia) { return .encrypted }
            return inputs.pinned ? .blocked(.downgrade) : fallback
        }
        if inputs.proofTimedOut { return inputs.pinned ? .blocked(.proofTimeout) : fallback }
        if inputs.announceHasPrivateMedia || inputs.pinned { return .wait }
        return fallback
    }
}
