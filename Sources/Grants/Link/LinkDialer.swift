import Elapsed
import Foundation
import Runner

/// Dials a contact at its cached address, requiring the contact's own key, within the configured connect timeout.
struct LinkDialer {
    let node: Node
    let context: JobContext

    /// Opens `protocolName` to `contact`. Throws `LinkFailure` when the contact cannot be reached or is not who it should be.
    /// `until` (a pass's or a contact's deadline) ends the connection sooner than `link.connection-timeout-seconds`.
    func dial(_ contact: Contact, _ protocolName: LinkProtocolName, until: MonotonicInstant? = nil) throws -> LinkConnection {
        try dial(contact.endpoint, at: contact.address, protocolName, until: until)
    }

    /// Opens `protocolName` to the node with key `endpoint` at `address` (a contact's cached `HOST:PORT`), with the
    /// `link.*` deadlines: connect and handshake within `link.connect-timeout-seconds`.
    func dial(_ endpoint: EndpointID, at address: String?, _ protocolName: LinkProtocolName, until: MonotonicInstant? = nil) throws -> LinkConnection {
        guard let text = address, let parsed = try? LinkAddress.parseLink(text) else { throw LinkFailure.unreachable }
        return try LinkConnection.dial(parsed, expected: endpoint, protocolName: protocolName, identity: node.identity,
                                       connectTimeout: try context.settings.int(GrantsSettings.connectTimeout),
                                       deadlines: try LinkDeadlines.dialling(context.settings), until: until)
    }

    /// After a refused proof: drops the dead held grant and marks the contact `revoked` or `lapsed`.
    func forget(_ grant: HeldGrant, answer: ProofAnswer, contact: Contact) throws {
        try node.database.write { _ in
            try node.held.delete(rowID: grant.rowID)
            if try node.held.usable(contactID: contact.id) == nil { try node.contacts.markStatus(answer, contactID: contact.id) }
        }
    }

    /// What to tell the user about an unreachable contact (no address or identifier in it).
    static func explain(_ failure: LinkFailure, timeout: Int) -> String {
        switch failure {
        case .timeout: return "the contact did not answer at its last known address within \(timeout) s"
        case .unreachable: return "nothing answers at the contact's last known address"
        case .wrongPeer: return "another device now answers at the contact's last known address (reinstalled? this device is no longer recognized there — pair again)"
        case .handshake: return "the device at the contact's address refused the secure link"
        default: return "the link to the contact broke off"
        }
    }
}
