import Foundation
import Runner

/// How long one link connection may take: its TLS handshake, each message, and the whole connection.
///
/// Every bound is an absolute instant, never a per-packet or per-read timeout that a peer trickling one byte at a
/// time could keep resetting. The same bounds apply to dialled connections,
/// to `serve-link --listen` and to the one connection `serve-link` answers on stdin.
package struct LinkDeadlines: Sendable, Equatable {
    /// Seconds from the connection's first packet to the end of its QUIC/TLS handshake.
    package var handshakeSeconds: TimeInterval
    /// Seconds one message (a frame's length and body) may take to arrive or to leave.
    package var messageSeconds: TimeInterval
    /// Seconds the whole connection may last, handshake included.
    package var connectionSeconds: TimeInterval

    package init(handshakeSeconds: TimeInterval, messageSeconds: TimeInterval, connectionSeconds: TimeInterval) {
        self.handshakeSeconds = handshakeSeconds
        self.messageSeconds = messageSeconds
        self.connectionSeconds = connectionSeconds
    }

    /// The defaults of the `link.*` settings (for tests and callers without a store).
    package static let standard = LinkDeadlines(handshakeSeconds: 10, messageSeconds: 10, connectionSeconds: 30)

    /// The deadlines `serve-link` answers with (`link.handshake-timeout-seconds`, `link.message-timeout-seconds`,
    /// `link.connection-timeout-seconds`).
    static func serving(_ settings: Settings) throws -> LinkDeadlines {
        LinkDeadlines(handshakeSeconds: TimeInterval(try settings.int(GrantsSettings.handshakeTimeout)),
                      messageSeconds: TimeInterval(try settings.int(GrantsSettings.messageTimeout)),
                      connectionSeconds: TimeInterval(try settings.int(GrantsSettings.connectionTimeout)))
    }

    /// The deadlines a dialled connection gets: connect and handshake within `link.connect-timeout-seconds`.
    static func dialling(_ settings: Settings) throws -> LinkDeadlines {
        var deadlines = try serving(settings)
        deadlines.handshakeSeconds = TimeInterval(try settings.int(GrantsSettings.connectTimeout))
        return deadlines
    }
}
