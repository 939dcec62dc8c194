/// Why a QUIC connection or one of its waits failed.
package enum QUICError: Error, Sendable, Equatable {
    /// Nothing answered at the address (no route, ICMP unreachable, name not resolved).
    case unreachable
    /// The deadline passed (handshake, message or connection).
    case timeout
    /// The peer's key is not the endpoint id dialled.
    case wrongPeer
    /// The TLS handshake was refused by either side (no common protocol, no client key, bad signature); a refusal the
    /// peer sent carries its TLS alert.
    case handshake(alert: UInt8?)
    /// The peer finished its side of the stream before the bytes wanted arrived.
    case finished
    /// The connection ended (closed by the peer, reset, idle timeout).
    case closed
    /// The caller's stop condition became true (SIGTERM/SIGINT).
    case stopped
    /// A local failure: a socket or the QUIC stack.
    case io
}
