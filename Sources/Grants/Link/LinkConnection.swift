import CShims
import Cryptography
import Elapsed
import Foundation
import QUIC
import Runner

/// One authenticated link connection: QUIC v1 with TLS 1.3 over raw Ed25519 keys (iroh's direct connections), one
/// protocol chosen by ALPN, and one bidirectional stream opened by the dialler carrying length-prefixed JSON.
///
/// Each frame is a 4-byte big-endian length and that many bytes of one JSON object, at most 64 KiB. An oversize,
/// truncated or malformed frame throws a `LinkFailure`, and the caller closes the connection having written nothing.
/// The handshake, each message and the whole connection end at absolute deadlines (`LinkDeadlines`); every wait is
/// also cut within 250 ms of SIGTERM/SIGINT.
package final class LinkConnection {
    /// Largest frame body accepted or sent.
    package static let maxFrame = 64 * 1024

    let stream: QUICConnection
    /// The peer's endpoint id: its raw TLS key.
    package let remote: EndpointID
    /// The protocol ALPN selected.
    package let protocolName: LinkProtocolName
    /// Whether this side dialled (the dialler closes first; the server waits for it).
    let dialled: Bool
    private var closed = false
    /// No read or write completes after this instant (the connection deadline; a caller may bring it forward).
    package var deadline: MonotonicInstant
    /// Seconds one message may take to arrive or leave.
    package let messageSeconds: TimeInterval
    /// Served connections: when its last whole frame came or went, and whether it proved a grant (for making room).
    var activity: LinkActivity?

    init(stream: QUICConnection, remote: EndpointID, protocolName: LinkProtocolName, dialled: Bool, deadline: MonotonicInstant, messageSeconds: TimeInterval) {
        self.stream = stream
        self.remote = remote
        self.protocolName = protocolName
        self.dialled = dialled
        self.deadline = deadline
        self.messageSeconds = messageSeconds
    }

    deinit { close() }

    /// Stops waits when the process is asked to stop.
    static let stopCondition: @Sendable () -> Bool = { StopSignals.heard }

    /// Dials `address` (UDP), requiring `protocolName` and a server whose key is `expected`, then sends the hello
    /// frame that opens the stream (`LinkWire.hello`).
    ///
    /// The handshake gets `connectTimeout`; `until` (a pass's or a contact's deadline) bounds the whole connection
    /// when it comes before `deadlines.connectionSeconds`.
    package static func dial(_ address: LinkAddress, expected: EndpointID, protocolName: LinkProtocolName, identity: NodeIdentity,
                            connectTimeout: Int, deadlines: LinkDeadlines = .standard, until: MonotonicInstant? = nil) throws -> LinkConnection {
        let start = QUICConnection.clock.now()
        let connectionDeadline = min(start + deadlines.connectionSeconds, until ?? .distantFuture)
        let handshakeDeadline = min(start + TimeInterval(connectTimeout), connectionDeadline)
        let candidates = QUICAddress.resolve(host: address.host, port: address.port)
        guard !candidates.isEmpty else { throw LinkFailure.unreachable }
        let quicIdentity = try LinkIdentity.quic(identity)
        var lastFailure = LinkFailure.unreachable
        for candidate in candidates {
            do {
                let stream = try QUICEndpoint.dial(candidate, expected: expected.bytes, alpn: protocolName.rawValue, identity: quicIdentity,
                                                   timeouts: LinkIdentity.timeouts(deadlines), handshakeDeadline: handshakeDeadline,
                                                   shouldStop: stopCondition)
                let connection = LinkConnection(stream: stream, remote: expected, protocolName: protocolName, dialled: true,
                                                deadline: connectionDeadline, messageSeconds: deadlines.messageSeconds)
                // The stream is the dialler's; the server sees it only once the hello is sent on it.
                try connection.send(LinkWire.hello)
                return connection
            } catch let error as QUICError {
                lastFailure = LinkFailure(error, handshake: true)
                if lastFailure != .unreachable { throw lastFailure }
            }
        }
        throw lastFailure
    }

    /// The server side of a connection whose handshake completed at the endpoint, accepted at `start`: reads the
    /// dialler's hello. Nil protocol or key (cannot happen after a completed handshake) is a handshake failure.
    static func accept(_ stream: QUICConnection, deadlines: LinkDeadlines, start: MonotonicInstant, activity: LinkActivity? = nil) throws -> LinkConnection {
        guard let remote = try? EndpointID(bytes: stream.remoteKey), let protocolName = LinkProtocolName(rawValue: stream.protocolName) else {
            stream.abort()
            throw LinkFailure.handshake
        }
        let connection = LinkConnection(stream: stream, remote: remote, protocolName: protocolName, dialled: false,
                                        deadline: start + deadlines.connectionSeconds, messageSeconds: deadlines.messageSeconds)
        connection.activity = activity
        // The hello ends the handshake: a connection that has not sent it by the handshake deadline (counted from its
        // first packet) is cut and keeps no slot. A missing or wrong hello is cut at once (abort), not closed
        // politely: that would wait for the peer.
        let connectionDeadline = connection.deadline
        connection.deadline = min(connectionDeadline, stream.handshakeDeadline)
        do { try connection.receive().expect("hello") } catch {
            connection.abort()
            throw error
        }
        connection.deadline = connectionDeadline
        return connection
    }

    // MARK: Frames

    /// Sends one message.
    package func send(_ message: JSON) throws {
        try sendFrame(Array(message.rendered().utf8))
    }

    /// Sends raw frame bytes (the body after the length); also used by tests to play a hostile peer.
    package func sendFrame(_ body: [UInt8]) throws {
        var length = UInt32(body.count).bigEndian
        var frame = withUnsafeBytes(of: &length) { Array($0) }
        frame += body
        try sendBytes(frame)
        activity?.touch()
    }

    /// Sends arbitrary bytes as they are (tests: truncated frames, lying lengths, dribbled bytes).
    package func sendBytes(_ bytes: [UInt8]) throws {
        do { try stream.write(bytes, until: messageDeadline) } catch let error as QUICError { throw LinkFailure(error, handshake: false) }
    }

    /// Receives one message.
    package func receive() throws -> LinkMessage {
        let body = try receiveFrame()
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { throw LinkFailure.malformed }
        return try LinkMessage(fields: object)
    }

    /// Receives one frame's body as raw bytes (the JSON text), checking only the length.
    package func receiveFrame() throws -> [UInt8] {
        // The whole frame, length and body, is one message with one deadline.
        let until = messageDeadline
        let header = try readExactly(4, until: until)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= LinkConnection.maxFrame else { throw LinkFailure.oversize }
        let body = try readExactly(length, until: until)
        activity?.touch()
        return body
    }

    /// Whether the connection has ended (the peer closed it, or a deadline or the idle timeout passed).
    package var isEnded: Bool { stream.isEnded }

    /// Closes the connection. On every protocol the server speaks last, so once the dialler has read the final
    /// reply the server has everything the dialler sent: the dialler closes at once (waiting for acknowledgements
    /// would only add the peer's ACK delay). The server finishes its stream and waits (briefly, within its
    /// deadlines) for the dialler to close first, so its last message is never lost to its own CONNECTION_CLOSE.
    package func close() {
        guard !closed else { return }
        closed = true
        if dialled {
            stream.abort(code: 0)
            return
        }
        let linger = min(QUICConnection.clock.deadline(in: 2), deadline)
        stream.finish()
        stream.waitForPeer(until: linger)
        stream.close(linger: linger)
    }

    /// Closes at once, dropping anything unsent (a refused or broken exchange).
    package func abort() {
        closed = true
        stream.abort()
    }

    /// The end of the message starting now: `messageSeconds` from now, or the connection deadline if sooner.
    private var messageDeadline: MonotonicInstant { min(QUICConnection.clock.deadline(in: messageSeconds), deadline) }

    private func readExactly(_ count: Int, until: MonotonicInstant) throws -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(count)
        while buffer.count < count {
            do { buffer += try stream.read(max: count - buffer.count, until: until) } catch let error as QUICError {
                throw LinkFailure(error, handshake: false)
            }
        }
        return buffer
    }
}

extension LinkFailure {
    /// The link's word for a QUIC failure.
    init(_ error: QUICError, handshake: Bool) {
        switch error {
        case .unreachable: self = .unreachable
        case .timeout: self = .timeout
        case .wrongPeer: self = .wrongPeer
        case .handshake: self = .handshake
        case .finished, .closed: self = .truncated
        case .stopped: self = .stopped
        case .io: self = .io
        }
    }
}
