import Cryptography
import Runner

/// The link's messages as they go on the wire, and their size limits.
///
/// Every exchange runs on one bidirectional QUIC stream the dialler opens. A QUIC server sees a stream only once the
/// dialler sends on it, so on every protocol the dialler speaks first: a `hello` frame (`{"type":"hello"}`, the same
/// for every ALPN), which the server requires before anything else. Then the server sends `challenge`; the client sends `proof` (revoke and cancel: no proof);
/// the server sends `answer`. Then `/vnidrop/offer/1`: `offer` → `offer-result`; `/vnidrop/pull/1`: `pull` →
/// (`offers` → `ack`)… until an empty `offers`, where each `ack` names every offer of its frame once, as taken
/// (`offer_ids`) or refused (`refused`: the sender keeps holding it); `/vnidrop/revoke/1`: `revoke` → `done`;
/// `/vnidrop/cancel/1`: `cancel` → `done`.
package enum LinkWire {
    package static let maxTicketBytes = 8192
    package static let maxNameBytes = 100
    /// Offers per `offers` frame: 5 × (8 KiB ticket + fields) stays well under the 64 KiB frame limit.
    package static let offersPerFrame = 5
    package static let maxDecisions = 100
    package static let maxRevokedGrants = 100
    package static let maxCancelledOffers = 100
    /// Most offers a puller reads in one pull; a sender streaming more is cut off there.
    package static let maxOffersPerPull = 1000

    /// The dialler's first frame on every protocol: it opens the stream so the server can speak.
    package static let hello: JSON = ["type": "hello"]

    package static func challenge(_ bytes: [UInt8]) -> JSON { ["type": "challenge", "challenge": .string(Hex.encode(bytes))] }

    package static func proof(grantID: [UInt8], proof: [UInt8]) -> JSON {
        ["type": "proof", "grant_id": .string(Hex.encode(grantID)), "proof": .string(Hex.encode(proof))]
    }

    /// The answer frame. Every `lapsed` answer is these exact bytes, whatever the reason.
    package static func answer(_ answer: ProofAnswer) -> JSON { ["type": "answer", "answer": .string(answer.rawValue)] }

    package static func decisions(_ items: [OfferDecision]) -> JSON {
        .array(items.map { ["offer_id": .string($0.offerID), "decision": .string($0.decision.rawValue)] })
    }

    /// Parses a `decisions` array, dropping nothing silently: a malformed entry refuses the whole message.
    package static func parseDecisions(_ message: LinkMessage) throws -> [OfferDecision] {
        try message.objects("decisions", maxCount: maxDecisions).map { item in
            let id = Hex.encode(try item.hex("offer_id", count: 16))
            guard let decision = OfferDecision.Kind(rawValue: try item.string("decision", maxBytes: 16)) else { throw LinkFailure.malformed }
            return OfferDecision(offerID: id, decision: decision)
        }
    }

    /// The puller's answer to one `offers` frame: which offers it took in (stored, or already known) and which it
    /// refused (the sender keeps holding those).
    package static func ack(taken: [String], refused: [String]) -> JSON {
        ["type": "ack", "offer_ids": .array(taken.map { .string($0) }), "refused": .array(refused.map { .string($0) })]
    }

    /// Parses an `ack` (an `ack` without `refused` refuses nothing).
    package static func parseAck(_ message: LinkMessage) throws -> (taken: [String], refused: [String]) {
        let taken = try offerIDs(message, "offer_ids", maxCount: offersPerFrame)
        let refused = message.fields["refused"] == nil ? [] : try offerIDs(message, "refused", maxCount: offersPerFrame)
        return (taken, refused)
    }

    /// The sender's cancel notice for offers it delivered earlier.
    package static func cancel(_ offerIDs: [String]) -> JSON {
        ["type": "cancel", "offer_ids": .array(offerIDs.prefix(maxCancelledOffers).map { .string($0) })]
    }

    package static func parseCancel(_ message: LinkMessage) throws -> [String] {
        try offerIDs(message, "offer_ids", maxCount: maxCancelledOffers)
    }

    /// An array of offer ids, each 32 lowercase hex digits.
    static func offerIDs(_ message: LinkMessage, _ key: String, maxCount: Int) throws -> [String] {
        try message.strings(key, maxCount: maxCount, maxBytes: 32).map { text in
            guard text.utf8.count == 32, text == text.lowercased(), (try? Hex.decode(text)) != nil else { throw LinkFailure.malformed }
            return text
        }
    }
}

/// A receiver's decision on an offer, reported to the sender at the next link contact.
package struct OfferDecision: Sendable, Equatable {
    package enum Kind: String, Sendable { case accepted, declined }
    package let offerID: String
    package let decision: Kind
}

/// An offer as it travels: never logged, the ticket sealed at rest on both sides.
package struct OfferPayload: Sendable {
    package let offerID: String
    package let ticket: String
    package let senderName: String?
    package let fileCount: Int64
    package let totalBytes: Int64

    package var json: JSON {
        ["offer_id": .string(offerID), "ticket": .string(ticket), "sender_name": .optional(senderName),
         "file_count": .int(fileCount), "total_bytes": .int(totalBytes)]
    }

    package init(offerID: String, ticket: String, senderName: String?, fileCount: Int64, totalBytes: Int64) {
        self.offerID = offerID
        self.ticket = ticket
        self.senderName = senderName
        self.fileCount = fileCount
        self.totalBytes = totalBytes
    }

    /// Reads and bounds an offer from a peer.
    package init(_ message: LinkMessage) throws {
        offerID = Hex.encode(try message.hex("offer_id", count: 16))
        ticket = try message.string("ticket", maxBytes: LinkWire.maxTicketBytes)
        guard !ticket.isEmpty, !ticket.contains(where: \.isNewline) else { throw LinkFailure.malformed }
        senderName = try message.optionalString("sender_name", maxBytes: LinkWire.maxNameBytes)
        fileCount = try message.count("file_count")
        totalBytes = try message.count("total_bytes")
    }
}
