import Runner

/// The issuer's whole answer to a proof: reads the block list and the issued grant, judges the proof in the fixed
/// order, and renews the grant's idle deadline when it is accepted — in one write transaction.
package struct GrantChecker {
    let node: Node

    package init(node: Node) { self.node = node }

    /// The answer for a proof of `grantID` over `challenge` from the authenticated `remote` endpoint, and the
    /// refusal reason kept locally (nil when accepted).
    package func check(remote: EndpointID, grantID: [UInt8], challenge: [UInt8], proof: [UInt8], now: Int64) throws -> (ProofAnswer, ProofRefusal?) {
        try node.database.writeIfNeeded { _ in
            let blocked = try node.blocks.contains(remote)
            let record = try node.issued.record(grantID: grantID)
            let refusal = ProofVerifier.judge(remoteIsBlocked: blocked, record: record, issuer: node.identity.endpoint, remote: remote,
                                              challenge: challenge, proof: proof, now: now)
            if let refusal { return (refusal.answer, refusal) }
            if let record { try node.issued.renew(record, now: now) }
            return (.accepted, nil)
        }
    }
}
