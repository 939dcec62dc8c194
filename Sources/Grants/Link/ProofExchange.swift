import Cryptography
import Runner

/// The grant challenge–response over a link connection, for both sides.
package enum ProofExchange {
    /// Server side: sends a fresh challenge, reads the proof, checks it (a write: an accepted grant's idle deadline is
    /// renewed, through serve-link's writer), sends the answer once that commit returned. Returns the answer and,
    /// kept local, the refusal reason.
    static func answer(_ connection: LinkConnection, store: LinkStore, now: Int64) throws -> (ProofAnswer, ProofRefusal?) {
        let challenge: [UInt8]
        do { challenge = try SecureRandom.bytes(count: GrantProof.challengeCount) } catch { throw JobError.internal("the system random source failed") }
        try connection.send(LinkWire.challenge(challenge))
        let message = try connection.receive()
        try message.expect("proof")
        let grantID = try message.hex("grant_id", count: GrantProof.grantIDCount)
        let proof = try message.hex("proof", count: 32)
        let remote = connection.remote
        let result = try store.write { node in
            try GrantChecker(node: node).check(remote: remote, grantID: grantID, challenge: challenge, proof: proof, now: now)
        }
        try connection.send(LinkWire.answer(result.0))
        return result
    }

    /// Client side: reads the challenge, proves `grant`, returns the issuer's answer.
    package static func prove(_ connection: LinkConnection, grant: HeldGrant, identity: NodeIdentity) throws -> ProofAnswer {
        let message = try connection.receive()
        try message.expect("challenge")
        let challenge = try message.hex("challenge", count: GrantProof.challengeCount)
        let proof = GrantProof.prove(secret: grant.secret, challenge: challenge, issuer: connection.remote, holder: identity.endpoint)
        try connection.send(LinkWire.proof(grantID: grant.grantID, proof: proof))
        let reply = try connection.receive()
        try reply.expect("answer")
        guard let answer = ProofAnswer(rawValue: try reply.string("answer", maxBytes: 16)) else { throw LinkFailure.malformed }
        return answer
    }
}
