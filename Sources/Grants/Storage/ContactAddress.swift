import Runner

/// The reachability mitigation of docs/protocols/grants-and-link.md §5: a contact's cached address is refreshed after every successful
/// connection.
///
/// A node dialling out tells the peer where its own `serve-link` listens (`addr`, from `link.advertise-address`)
/// in the message that follows a successful proof; the peer, if it remembers the dialler as a contact, caches that
/// address. The dialler's identity is the link's authenticated key, so only a contact can move its own entry.
enum ContactAddress {
    /// The field carrying the dialler's address.
    static let field = "addr"

    /// `message` with this node's advertised address added, when one is set.
    static func advertising(_ message: JSON, settings: Settings) throws -> JSON {
        let address = try settings.string(GrantsSettings.advertiseAddress)
        guard !address.isEmpty else { return message }
        return message.merging([field: .string(address)])
    }

    /// After a successful proof: caches the address `message` carries for `remote` when it is a contact. A missing
    /// field changes nothing; a malformed one is refused like any malformed field. Returns whether it changed.
    @discardableResult
    static func refresh(from message: LinkMessage, remote: EndpointID, node: Node, now: Int64) throws -> Bool {
        guard let text = try message.optionalString(field, maxBytes: 300) else { return false }
        guard let address = try? LinkAddress.parseLink(text) else { throw LinkFailure.malformed }
        guard let contact = try node.contacts.find(remote), contact.address != address.text else { return false }
        try node.contacts.recordAddress(address.text, contactID: contact.id, now: now)
        return true
    }
}
