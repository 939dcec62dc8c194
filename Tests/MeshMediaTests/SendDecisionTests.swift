import Testing
@testable import MeshMedia

/// The send table of docs/protocols/mesh-wire.md, row by row, with and without consent.
@Suite(.timeLimit(.minutes(15))) struct SendDecisionTests {
    func decide(stable: Bool = true, pinned: Bool = false, announce: Bool = false, proof: Capabilities? = nil,
                timedOut: Bool = false, consent: Bool = false, canEncrypt: Bool = true) -> SendDecision {
        SendDecision.decide(.init(hasStableKey: stable, pinned: pinned, announceHasPrivateMedia: announce, proof: proof,
                                  proofTimedOut: timedOut, consent: consent, canEncrypt: canEncrypt))
    }

    @Test func noStableFingerprintIsBlockedWhateverTheConsent() {
        #expect(decide(stable: false) == .blocked(.noStableKey))
        #expect(decide(stable: false, consent: true) == .blocked(.noStableKey))
    }

    @Test func aSessionProofWithTheBitMeansEncryptedOnly() {
        #expect(decide(proof: .privateMedia) == .encrypted)
        #expect(decide(pinned: true, proof: .privateMedia, consent: true) == .encrypted)
        #expect(decide(proof: [.privateMedia, .groups], timedOut: true) == .encrypted)
    }

    @Test func aProofWithoutTheBitIsADowngradeForAPinnedPeerAndNeedsConsentOtherwise() {
        #expect(decide(pinned: true, announce: true, proof: [], consent: true) == .blocked(.downgrade))
        #expect(decide(proof: [.groups]) == .blocked(.needsConsent))
        #expect(decide(proof: [.groups], consent: true) == .legacy)
    }

    @Test func noProofInTimeBlocksAPinnedPeerAndNeedsConsentOtherwise() {
        #expect(decide(pinned: true, announce: true, timedOut: true, consent: true) == .blocked(.proofTimeout))
        #expect(decide(announce: true, timedOut: true) == .blocked(.needsConsent))
        #expect(decide(announce: true, timedOut: true, consent: true) == .legacy)
    }

    @Test func anAnnouncedBitOrAPinWaitsForProof() {
        #expect(decide(announce: true) == .wait)
        #expect(decide(announce: true, consent: true) == .wait)
        #expect(decide(pinned: true) == .wait)
        #expect(decide(pinned: true, consent: true) == .wait)
    }

    @Test func otherwiseOnlyConsentAllowsTheSignedLegacyForm() {
        #expect(decide() == .blocked(.needsConsent))
        #expect(decide(consent: true) == .legacy)
    }

    @Test func aSenderThatCannotEncryptNeverReachesAPinnedPeer() {
        #expect(decide(pinned: true, proof: .privateMedia, consent: true, canEncrypt: false) == .blocked(.downgrade))
        #expect(decide(announce: true, consent: true, canEncrypt: false) == .legacy)
    }
}
