import Runner

/// Why a link connection failed, as a fixed category word for logs (never an address or an identifier).
package enum LinkFailure: String, Error, Sendable, LogWord {
    /// DNS, refused, unreachable: nothing answered at the address.
    case unreachable
    /// Nothing completed within the timeout.
    case timeout
    /// The QUIC/TLS handshake failed (no common protocol, no client key, a refused key).
    case handshake
    /// The peer's key is not the contact's endpoint id (a stale address now used by someone else).
    case wrongPeer = "wrong-peer"
    /// A frame longer than 64 KiB was announced.
    case oversize
    /// The connection ended inside a frame or before an expected one.
    case truncated
    /// A frame that is not the expected JSON object.
    case malformed
    /// A message of the wrong type for this point of the exchange.
    case outOfOrder = "out-of-order"
    /// The socket or the QUIC stack failed.
    case io
    /// The process is stopping (SIGTERM or SIGINT arrived while waiting on the peer).
    case stopped
}
