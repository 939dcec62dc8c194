import Runner

/// The issuer's answer to a grant proof, as it goes on the wire.
///
/// Blocked, unknown, expired, wrong-endpoint and bad-MAC proofs all answer `lapsed`, with byte-identical messages,
/// so a block cannot be detected by probing; `revoked` is distinct so the holder can drop the entry and say so.
package enum ProofAnswer: String, Sendable, LogWord {
    case accepted, revoked, lapsed
}

/// Why a proof was refused — kept on the issuer's side only (logs as a category, never on the wire).
package enum ProofRefusal: String, Sendable, LogWord {
    case blocked, unknown, revoked, expired, wrongEndpoint = "wrong-endpoint", badProof = "bad-proof"

    /// What the holder is told.
    package var answer: ProofAnswer { self == .revoked ? .revoked : .lapsed }
}
