import Foundation
@testable import Grants
import QUIC
import Runner
import Testing
import TestSupport

/// A contact's link endpoint (QUIC) that accepts the puller's proof, hands over `offers` in frames of up to five as a
/// real contact does, waits for each acknowledgement, and then never sends the empty frame that ends the pull: the
/// puller is cut for time with those offers already taken in.
final class StallingAfterOffersContact: QUICServerDelegate, @unchecked Sendable {
    let endpoint: QUICEndpoint
    let address: String
    let offers: [OfferPayload]

    init(identity: NodeIdentity, on host: String, offers: [OfferPayload]) throws {
        self.offers = offers
        endpoint = try QUICEndpoint.listen(on: try #require(QUICAddress.resolve(host: host, port: 0).first), identity: try LinkIdentity.quic(identity),
                                           alpns: LinkProtocolName.allCases.map(\.rawValue),
                                           timeouts: QUICTimeouts(handshakeSeconds: 10, idleSeconds: 60), shouldStop: { false })
        address = "\(host):\(endpoint.port)"
        endpoint.start(delegate: self)
    }

    func admit(_ address: QUICAddress) -> QUICAdmission { .admitted }
    func refused(_ address: QUICAddress) {}
    func abandoned(_ address: QUICAddress, because error: QUICError?, heldSlot: Bool) {}

    func accepted(_ stream: QUICConnection) {
        Thread { [self] in
            let deadlines = LinkDeadlines(handshakeSeconds: 10, messageSeconds: 60, connectionSeconds: 60)
            guard let connection = try? LinkConnection.accept(stream, deadlines: deadlines, start: QUICConnection.clock.now()) else { return }
            defer { connection.abort() }
            do {
                try connection.send(LinkWire.challenge([UInt8](repeating: 7, count: GrantProof.challengeCount)))
                _ = try connection.receive()
                try connection.send(LinkWire.answer(.accepted))
                _ = try connection.receive()
                for start in stride(from: 0, to: offers.count, by: LinkWire.offersPerFrame) {
                    let frame = offers[start..<min(start + LinkWire.offersPerFrame, offers.count)]
                    try connection.send(["type": "offers", "offers": .array(frame.map(\.json))])
                    _ = try connection.receive()
                }
                // No empty frame: the puller waits until its contact deadline cuts it.
                _ = try? connection.receive()
            } catch { return }
        }.start()
    }

    deinit { endpoint.stop() }
}

/// `pull-offers` when a contact's pull is cut for time part-way.
@Suite(.tags(.process, .iroh), .timeLimit(.minutes(15))) struct PullCutForTimeTests {
    @Test func aPullCutForTimeMidwayCountsAndNotifiesTheOffersItAlreadyStored() throws {
        let bob = LinkTestNode(), abel = LinkTestNode()
        let offers = (0..<7).map { index in
            OfferPayload(offerID: String(format: "%032x", index + 1), ticket: "ticket-\(index)", senderName: nil, fileCount: 1, totalBytes: 1)
        }
        let contact = try StallingAfterOffersContact(identity: try abel.identity(), on: "127.0.0.2", offers: offers)
        try pair(issuer: abel, holder: bob, label: "abel", address: contact.address)
        try bob.ok(["grants", "issue", "--to", abel.endpointHex])   // Bob takes offers only from holders of his grants
        try bob.set(["pull-offers.contact-timeout-seconds": "3"])

        let pass = try bob.json(["pull-offers", "--check-now"])
        let counts = try #require(pass["counts"] as? [String: Int])
        // Before, the 7 stored offers were counted as collected=0 and nobody was told of them.
        #expect(try bob.scalar("SELECT count(*) FROM incoming_offers") == 7)
        #expect(counts["collected"] == 7 && counts["skipped_for_time"] == 1, "\(counts)")
        #expect(notifications(bob) == ["incoming-offer 7"])
    }
}
