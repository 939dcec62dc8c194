import Runner

/// `job offers list [--json]`: incoming and outgoing offers with their state — never the tickets.
struct OffersListCommand: Command {
    let path = ["offers", "list"]
    let summary = "list incoming and outgoing offers (never the tickets)"

    func run(_ context: JobContext) throws {
        let node = try Node(context)
        let incoming = try IncomingOffers(database: node.database, vault: node.vault).list()
        let outgoing = try OutgoingOffers(database: node.database, vault: node.vault).list()
        let contacts = try node.contacts.all()
        // A one-way holder (no contact here) is named by the label given when its grant was issued.
        let directory = try PeerDirectory(node: node, now: context.nowMilliseconds)
        func label(_ endpoint: EndpointID) -> String? { directory.label(endpoint) }
        if context.jsonOutput {
            context.printJSON([
                "incoming": .array(incoming.map { offer in
                    ["offer_id": .string(offer.offerID), "from": .string(offer.sender.hex), "from_label": .optional(label(offer.sender)),
                     "claimed_name": .optional(offer.senderName), "state": .string(offer.state), "files": .int(offer.fileCount),
                     "bytes": .int(offer.totalBytes), "received_at": TimeText.json(offer.receivedAt)]
                }),
                "outgoing": .array(outgoing.map { offer in
                    let contact = contacts.first { $0.id == offer.contactID }
                    return ["offer_id": .string(offer.offerID), "to": .optional(contact?.endpoint.hex), "to_label": .optional(contact?.label),
                            "state": .string(offer.state), "deliverable": .bool(offer.state == "held" ? contact?.status == "active" : offer.state != "undeliverable"),
                            "files": .int(offer.fileCount), "bytes": .int(offer.totalBytes),
                            "created_at": TimeText.json(offer.createdAt), "updated_at": TimeText.json(offer.updatedAt)]
                }),
            ])
            return
        }
        context.print("incoming (\(incoming.count)):")
        for offer in incoming {
            let from = label(offer.sender) ?? "unlisted device \(offer.sender.fingerprint)"
            context.print("  \(offer.offerID)  from \(from)  \(offer.state)  \(offer.fileCount) file(s), \(offer.totalBytes) bytes")
        }
        context.print("outgoing (\(outgoing.count)):")
        for offer in outgoing {
            let to = contacts.first { $0.id == offer.contactID }?.label ?? "?"
            let status = contacts.first { $0.id == offer.contactID }?.status
            let state = offer.state == "held" ? "held — " + HeldOfferNote.text(contactStatus: status)
                : offer.state == "undeliverable" ? "undeliverable — " + HeldOfferNote.finished : offer.state
            context.print("  \(offer.offerID)  to \(to)  \(state)")
        }
    }
}

/// Reads and checks an offer id argument (32 hex digits).
enum OfferIDArgument {
    static func parse(_ text: String) throws -> String {
        guard text.utf8.count == 32, text.allSatisfy({ $0.isHexDigit }), text == text.lowercased() else {
            throw JobError.usage("an offer id is 32 lowercase hex digits (see 'job offers list')")
        }
        return text
    }
}

/// Reads the `--from` option of `offers accept|decline`: which sender of an offer id is meant, named as every
/// command names a device (`PeerDirectory`): a label, a fingerprint prefix (the one `offers list` shows) or the
/// endpoint id.
enum OfferSenderArgument {
    static let option = OptionSpec.value("--from", "SENDER", "the sender, when several used that offer id: label, fingerprint or endpoint id")

    /// A test for the sender `text` names; nil when the option was not given.
    static func parse(_ text: String?, node: Node, now: Int64) throws -> ((EndpointID) -> Bool)? {
        guard let text else { return nil }
        let endpoint = try PeerDirectory(node: node, now: now).resolve(text)
        return { $0 == endpoint }
    }
}

/// `job offers cancel ID`: withdraws an outgoing offer; the share stops and the waiting ticket is deleted. When the
/// receiver may already hold the offer, it is told best-effort over the link, so the offer stops waiting there.
struct OffersCancelCommand: Command {
    let path = ["offers", "cancel"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "withdraw an outgoing offer (a held offer can then never be collected; a delivered one is withdrawn on the receiver)"
    let positionals = [PositionalSpec("ID", "the offer id")]

    func run(_ context: JobContext) throws {
        let id = try OfferIDArgument.parse(context.arguments.positional(0)!)
        let node = try Node(context)
        let offers = OutgoingOffers(database: node.database, vault: node.vault)
        guard let state = try offers.state(id), let contactID = try offers.contactID(id) else {
            throw JobError.badInput("offer-unknown", "no outgoing offer has that id; see 'job offers list'")
        }
        guard try offers.cancel(id, now: context.nowMilliseconds) else {
            throw JobError.badInput("offer-finished", "that offer is already \(state); nothing to cancel")
        }
        // A held offer may have reached the receiver by a pull whose acknowledgement was lost: tell it too.
        let notified = try node.contacts.find(id: contactID).map { CancelNotice.send(offerIDs: [id], to: $0, node: node, context: context) } ?? false
        context.logger.info("offer-cancelled", ["notified": .bool(notified)])
        if context.jsonOutput {
            context.printJSON(["offer_id": .string(id), "state": "cancelled", "peer_notified": .bool(notified)])
        } else if notified {
            context.print("cancelled; the share is stopped and the contact was told")
        } else if state == "delivered" {
            context.print("cancelled; the share is stopped (the contact could not be told now: it may still list the offer, but accepting it will fail)")
        } else {
            context.print("cancelled; the share is stopped")
        }
    }
}

/// `job offers accept ID [--from SENDER]`: confirms an incoming offer and prints its ticket for the transfer tool
/// (on a terminal with control characters escaped, since the sender chose the text).
struct OffersAcceptCommand: Command {
    let path = ["offers", "accept"]
    let summary = "accept an incoming offer and print its ticket for the transfer tool"
    let positionals = [PositionalSpec("ID", "the offer id")]
    let options = [OfferSenderArgument.option]

    func run(_ context: JobContext) throws {
        let id = try OfferIDArgument.parse(context.arguments.positional(0)!)
        let node = try Node(context)
        let offers = IncomingOffers(database: node.database, vault: node.vault)
        let offer = try offers.decidable(id, from: try OfferSenderArgument.parse(context.arguments.value("--from"), node: node, now: context.nowMilliseconds))
        try offers.accept(rowID: offer.rowID, now: context.nowMilliseconds)
        context.logger.info("offer-accepted")
        let ticket = String(decoding: offer.ticket.copyBytes(), as: UTF8.self)
        if context.jsonOutput { context.printJSON(["offer_id": .string(id), "ticket": .string(ticket)]) }
        else { context.print(TerminalText.forStdout(ticket)) }
    }
}

/// `job offers decline ID [--from SENDER]`: declines an incoming offer; the sender is told at once over the link when
/// it is a contact with an address (best effort), else at the next link contact, and stops the share.
struct OffersDeclineCommand: Command {
    let path = ["offers", "decline"]
    let libraries: [LazyLibrary] = [.quic]
    let summary = "decline an incoming offer (the sender is told now if reachable, else at the next link contact)"
    let positionals = [PositionalSpec("ID", "the offer id")]
    let options = [OfferSenderArgument.option]

    func run(_ context: JobContext) throws {
        let id = try OfferIDArgument.parse(context.arguments.positional(0)!)
        let node = try Node(context)
        let offers = IncomingOffers(database: node.database, vault: node.vault)
        let offer = try offers.decidable(id, from: try OfferSenderArgument.parse(context.arguments.value("--from"), node: node, now: context.nowMilliseconds))
        try offers.decline(rowID: offer.rowID, now: context.nowMilliseconds)
        // Best effort: the sender hears it now and stops the share; otherwise at the next link contact.
        let notified = DecisionNotice.send(to: offer.sender, node: node, context: context)
        context.logger.info("offer-declined", ["notified": .bool(notified)])
        if context.jsonOutput { context.printJSON(["offer_id": .string(id), "state": "declined", "sender_notified": .bool(notified)]) }
        else { context.print(notified ? "declined; the sender was told" : "declined; the sender learns it at the next link contact") }
    }
}
