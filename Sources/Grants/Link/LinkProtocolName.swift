/// The link's protocols, chosen by TLS ALPN.
package enum LinkProtocolName: String, Sendable, CaseIterable {
    /// A live offer from a grant holder.
    case offer = "/vnidrop/offer/1"
    /// A grant holder collecting offers held for it.
    case pull = "/vnidrop/pull/1"
    /// The issuer's best-effort notice that it revoked a grant.
    case revoke = "/vnidrop/revoke/1"
    /// The sender's best-effort notice that it cancelled offers it had delivered.
    case cancel = "/vnidrop/cancel/1"
    /// The receiver's best-effort notice of its decisions (a decline, an accept) on offers the sender made to it.
    case decision = "/vnidrop/decision/1"
}
