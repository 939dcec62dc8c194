import Cryptography
import Foundation
import Runner

/// `job offers send --to ENDPOINT --ticket-file F --files N --bytes B [--name NAME]`: offers a transfer to a contact.
///
/// Records the offer as held, then dials the contact with the grant it issued to this node and sends the offer; the
/// receiver records it as pending its user's confirmation. When the contact cannot be reached the offer is held here, and the contact collects it
/// at its next `pull-offers`. The share behind an offer is never public (`OfferShare.access`).
struct OffersSendCommand: Command {
    let path = ["offers", "send"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "offer a transfer ticket to a contact (held here until they check, if unreachable)"
    let options: [OptionSpec] = [
        .required("--to", "ENDPOINT", "the contact's endpoint id (64 hex) or label"),
        .required("--ticket-file", "FILE", "file holding the transfer ticket (one line, at most 8 KiB)"),
        .required("--files", "N", "number of files offered"),
        .required("--bytes", "B", "total size offered"),
        .value("--name", "NAME", "the sender name shown to the receiver (they keep their own label for you)"),
    ]
    let discussion = """
        Needs a grant the contact issued to this node ('job grants accept'). Delivered live when the contact's
        serve-link answers at its cached address within link.connect-timeout-seconds; otherwise held here and
        collected by the contact's next 'pull-offers'. Exit 69 when the contact revoked this device or the pairing
        lapsed (the dead grant is dropped), 75 when the contact's limits refuse offers for now.
        """

    func run(_ context: JobContext) throws {
        let fileCount = Int64(try context.arguments.requiredInteger("--files", in: Self.countRange, needs: "a whole number of at least 0"))
        let totalBytes = Int64(try context.arguments.requiredInteger("--bytes", in: Self.countRange, needs: "a whole number of at least 0"))
        let name = try context.arguments.value("--name").map(LabelRule.validate)
        let ticket = try readTicket(try context.arguments.required("--ticket-file"))
        let node = try Node(context)
        let contact = try node.contacts.resolve(try context.arguments.required("--to"))
        guard let grant = try node.held.usable(contactID: contact.id) else {
            if contact.status != "active" {
                throw JobError.unavailable("pair-again", "this contact is no longer reachable (\(contact.status == "revoked" ? "the other device removed this one" : "the pairing lapsed")) — pair again with a new grant")
            }
            throw JobError.badInput("no-grant", "this contact has not let this device reach it (no grant held); they must issue one with 'job grants issue'")
        }
        let offerID: String
        do { offerID = Hex.encode(try SecureRandom.bytes(count: 16)) } catch { throw JobError.internal("the system random source failed") }
        let offer = OfferPayload(offerID: offerID, ticket: ticket, senderName: name, fileCount: fileCount, totalBytes: totalBytes)
        let outgoing = OutgoingOffers(database: node.database, vault: node.vault)
        let dialer = LinkDialer(node: node, context: context)
        let timeout = try context.settings.int(GrantsSettings.connectTimeout)

        // Recorded before the dial: if this process dies after the receiver stored the offer, it is still listed here
        // (and can be cancelled); a later pull hands it over at most once (the receiver stores by offer id).
        try outgoing.record(offer, contactID: contact.id, state: .held, now: context.nowMilliseconds)
        let connection: LinkConnection
        do { connection = try dialer.dial(contact, .offer) } catch let failure as LinkFailure {
            try node.contacts.recordUnreachable(contactID: contact.id, now: context.nowMilliseconds, replaced: failure == .wrongPeer)
            context.logger.info("offer-held", ["reason": .of(failure)])
            report(context, offerID: offerID, state: "held",
                   "\(LinkDialer.explain(failure, timeout: timeout)); the offer is held here and will be delivered when they next check (if their address changed, accept a fresh grant with the new --addr)")
            return
        }
        defer { connection.close() }
        do {
            let answer = try ProofExchange.prove(connection, grant: grant, identity: node.identity)
            guard answer == .accepted else {
                try dialer.forget(grant, answer: answer, contact: contact)
                try outgoing.forget(offerID, contactID: contact.id)
                context.logger.info("offer-refused-grant", ["answer": .of(answer)])
                throw answer == .revoked
                    ? JobError.unavailable("grant-revoked", "this contact is no longer reachable (the other device removed this one) — pair again")
                    : JobError.unavailable("grant-lapsed", "this contact is no longer reachable (the pairing lapsed) — pair again with a new grant")
            }
            if let address = contact.address { try node.contacts.recordAddress(address, contactID: contact.id, now: context.nowMilliseconds) }
            try connection.send(try ContactAddress.advertising((["type": "offer"] as JSON).merging(offer.json), settings: context.settings))
            let reply = try connection.receive()
            try reply.expect("offer-result")
            let decisions = try LinkWire.parseDecisions(reply)
            let result = try reply.string("result", maxBytes: 16)
            try node.database.write { _ in
                for decision in decisions { try outgoing.apply(decision, contactID: contact.id, now: context.nowMilliseconds) }
                if result == "pending" { _ = try outgoing.markDelivered([offerID], contactID: contact.id, now: context.nowMilliseconds) }
                else { try outgoing.forget(offerID, contactID: contact.id) }
            }
            guard result == "pending" else {
                throw JobError.transient("offer-refused", "the contact is not taking offers from this device right now (too many pending or declined); try later")
            }
            context.logger.info("offer-sent", ["delivery": "live"])
            report(context, offerID: offerID, state: "delivered", "offered; the contact will be asked to confirm")
        } catch let failure as LinkFailure {
            // The offer may or may not have arrived: it stays held. A later pull delivers it at most once (stored by offer id).
            context.logger.warn("offer-held", ["reason": .of(failure)])
            report(context, offerID: offerID, state: "held",
                   "\(LinkDialer.explain(failure, timeout: timeout)); the offer is held here and will be delivered when they next check")
        }
    }

    private func report(_ context: JobContext, offerID: String, state: String, _ message: String) {
        if context.jsonOutput { context.printJSON(["offer_id": .string(offerID), "state": .string(state), "message": .string(message)]) }
        else { context.print("offer \(offerID): \(message)") }
    }

    /// Counts up to 2^53, the largest whole number a JSON reader keeps exactly.
    private static let countRange = 0...(1 << 53)

    private func readTicket(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw JobError.badInput("ticket-unreadable", "the ticket file cannot be read; check the path and its permissions")
        }
        guard data.count <= LinkWire.maxTicketBytes + 2, let text = String(data: data, encoding: .utf8) else {
            throw JobError.badInput("ticket-malformed", "the ticket file must hold one line of UTF-8 text of at most 8 KiB")
        }
        let ticket = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !ticket.isEmpty, ticket.utf8.count <= LinkWire.maxTicketBytes, !ticket.contains(where: \.isNewline) else {
            throw JobError.badInput("ticket-malformed", "the ticket file must hold one line of UTF-8 text of at most 8 KiB")
        }
        return ticket
    }
}

extension JSON {
    /// This object with `other`'s pairs appended.
    func merging(_ other: JSON) -> JSON {
        guard case .object(let left) = self, case .object(let right) = other else { return self }
        return .object(left + right)
    }
}
