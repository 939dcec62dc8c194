import Cryptography
@testable import Grants
import Testing

/// The ordered checks: blocked → unknown → wrong endpoint → revoked → expired → MAC, and what each answers.
@Suite(.timeLimit(.minutes(15))) struct ProofVerifierTests {
    let issuer = try! randomEndpoint()
    let holder = try! randomEndpoint()
    let secret = try! SecretBytes.random(count: 32)
    let challenge = try! SecureRandom.bytes(count: 32)
    let now: Int64 = 1_000_000

    func record(reason: String? = nil, expiresAt: Int64? = 2_000_000, holder: EndpointID? = nil) -> IssuedGrantRecord {
        IssuedGrantRecord(rowID: 1, secret: secret, holder: holder ?? self.holder, lifetimeMs: 1000, expiresAt: expiresAt, revokeReason: reason)
    }

    var goodProof: [UInt8] { GrantProof.prove(secret: secret, challenge: challenge, issuer: issuer, holder: holder) }

    func judge(blocked: Bool = false, _ record: IssuedGrantRecord?, remote: EndpointID? = nil, proof: [UInt8]? = nil) -> ProofRefusal? {
        ProofVerifier.judge(remoteIsBlocked: blocked, record: record, issuer: issuer, remote: remote ?? holder,
                            challenge: challenge, proof: proof ?? goodProof, now: now)
    }

    @Test func aValidProofIsAccepted() {
        #expect(judge(record()) == nil)
        #expect(judge(record(expiresAt: nil)) == nil, "a grant that never expires")
    }

    @Test func eachRefusalIsReportedInTheFixedOrder() throws {
        let stranger = try randomEndpoint()
        // Every fault at once: the block wins.
        #expect(judge(blocked: true, record(reason: "revoked", expiresAt: 1), remote: stranger, proof: [1]) == .blocked)
        #expect(judge(blocked: true, nil) == .blocked)
        #expect(judge(nil) == .unknown)
        // A stranger holding a revoked, expired or live grant's id: wrong endpoint first, so it never learns `revoked`.
        #expect(judge(record(reason: "revoked", expiresAt: 1), remote: stranger, proof: [1]) == .wrongEndpoint)
        #expect(judge(record(reason: "expired"), remote: stranger) == .wrongEndpoint)
        #expect(judge(record(expiresAt: 1), remote: stranger, proof: [1]) == .wrongEndpoint)
        #expect(judge(record(), remote: stranger, proof: [1]) == .wrongEndpoint)
        // The holder itself: revoked before expired before the MAC.
        #expect(judge(record(reason: "revoked", expiresAt: 1), proof: [1]) == .revoked)
        #expect(judge(record(reason: "expired"), proof: [1]) == .expired)
        #expect(judge(record(expiresAt: 1), proof: [1]) == .expired)
        #expect(judge(record(expiresAt: now)) == .expired, "the deadline itself is already lapsed")
        #expect(judge(record(), proof: [UInt8](repeating: 0, count: 32)) == .badProof)
    }

    @Test func onlyRevocationIsDistinguishableOnTheWire() {
        #expect(ProofRefusal.revoked.answer == .revoked)
        for refusal in [ProofRefusal.blocked, .unknown, .expired, .wrongEndpoint, .badProof] {
            #expect(refusal.answer == .lapsed)
        }
    }

    @Test func aProofFromAThirdEndpointWithTheRightSecretIsRefused() throws {
        let thief = try randomEndpoint()
        let stolen = GrantProof.prove(secret: secret, challenge: challenge, issuer: issuer, holder: thief)
        #expect(judge(record(), remote: thief, proof: stolen) == .wrongEndpoint)
    }

    @Test func aReplayedProofForAnEarlierChallengeIsRefused() throws {
        let earlier = try SecureRandom.bytes(count: 32)
        let captured = GrantProof.prove(secret: secret, challenge: earlier, issuer: issuer, holder: holder)
        #expect(judge(record(), proof: captured) == .badProof)
    }
}
