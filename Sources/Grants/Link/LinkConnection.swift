import COpenSSL
import Foundation
import Runner

/// One authenticated link connection: mutual TLS 1.3 over TCP, then length-prefixed JSON messages.
///
/// Each frame is a 4-byte big-endian length and that many bytes of one JSON object, at most 64 KiB. An oversize,
/// truncated or malformed frame throws a `LinkFailure`, and the caller closes the connection having written nothing.
/// The socket is non-blocking: the handshake, each message and the whole connection end at absolute deadlines
/// (`LinkDeadlines`) waited for with `poll()`, so a peer trickling bytes cannot hold the connection past them.
public final class LinkConnection {
    /// Largest frame body accepted or sent.
    public static let maxFrame = 64 * 1024

    let ssl: OpaquePointer
    let fd: Int32
    let context: TLSContext
    /// The peer's endpoint id: the raw key of its certificate.
    public let remote: EndpointID
    /// The protocol ALPN selected.
    public let protocolName: LinkProtocolName
    private var closed = false
    /// Set after a fatal TLS or socket error, when OpenSSL forbids sending close_notify.
    private var broken = false
    /// No read or write completes after this instant (the connection deadline; a caller may bring it forward).
    public var deadline: Date
    /// Seconds one message may take to arrive or leave.
    public let messageSeconds: TimeInterval

    private init(ssl: OpaquePointer, fd: Int32, context: TLSContext, remote: EndpointID, protocolName: LinkProtocolName,
                 deadline: Date, messageSeconds: TimeInterval) {
        self.ssl = ssl
        self.fd = fd
        self.context = context
        self.remote = remote
        self.protocolName = protocolName
        self.deadline = deadline
        self.messageSeconds = messageSeconds
    }

    deinit { close() }

    /// Dials `address`, requiring TLS 1.3 with `protocolName` and a server whose key is `expected`.
    ///
    /// TCP connect and handshake share `connectTimeout`; `until` (a pass's or a contact's deadline) bounds the whole
    /// connection when it comes before `deadlines.connectionSeconds`.
    public static func dial(_ address: LinkAddress, expected: EndpointID, protocolName: LinkProtocolName, identity: NodeIdentity,
                            connectTimeout: Int, deadlines: LinkDeadlines = .standard, until: Date? = nil) throws -> LinkConnection {
        ignoreSIGPIPE
        let start = Date()
        let connectionDeadline = min(start.addingTimeInterval(deadlines.connectionSeconds), until ?? .distantFuture)
        // The handshake gets the connect timeout too: a stale address that accepts TCP but never speaks TLS fails fast.
        let handshakeDeadline = min(start.addingTimeInterval(TimeInterval(connectTimeout)), connectionDeadline)
        let fd = try Socket.connect(address, until: handshakeDeadline)
        let context: TLSContext
        do { context = try TLSContext(identity: identity, role: .client) } catch { Foundation.close(fd); throw error }
        guard let ssl = SSL_new(context.pointer) else { Foundation.close(fd); throw JobError.internal("cannot create a TLS session") }
        let alpn = protocolName.wire
        guard SSL_set_fd(ssl, fd) == 1, SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count)) == 0 else {
            SSL_free(ssl); Foundation.close(fd)
            throw JobError.internal("cannot configure the TLS session")
        }
        do {
            try drive(ssl, fd: fd, until: handshakeDeadline, failure: .handshake) { SSL_connect(ssl) }
        } catch {
            ERR_clear_error(); SSL_free(ssl); Foundation.close(fd)
            throw error
        }
        guard let remote = TLSCertificate.peerEndpoint(ssl), selectedProtocol(ssl) == protocolName else {
            SSL_free(ssl); Foundation.close(fd)
            throw LinkFailure.handshake
        }
        let connection = LinkConnection(ssl: ssl, fd: fd, context: context, remote: remote, protocolName: protocolName,
                                        deadline: connectionDeadline, messageSeconds: deadlines.messageSeconds)
        guard remote == expected else {
            connection.close()
            throw LinkFailure.wrongPeer
        }
        return connection
    }

    /// Completes the server side of a connection accepted at `start` on `fd` (which the connection then owns).
    static func accept(fd: Int32, context: TLSContext, deadlines: LinkDeadlines, start: Date = Date()) throws -> LinkConnection {
        ignoreSIGPIPE
        Socket.setNonBlocking(fd)
        let connectionDeadline = start.addingTimeInterval(deadlines.connectionSeconds)
        let handshakeDeadline = min(start.addingTimeInterval(deadlines.handshakeSeconds), connectionDeadline)
        guard let ssl = SSL_new(context.pointer) else { Foundation.close(fd); throw JobError.internal("cannot create a TLS session") }
        guard SSL_set_fd(ssl, fd) == 1 else { SSL_free(ssl); Foundation.close(fd); throw JobError.internal("cannot configure the TLS session") }
        do {
            try drive(ssl, fd: fd, until: handshakeDeadline, failure: .handshake) { SSL_accept(ssl) }
        } catch {
            ERR_clear_error(); SSL_free(ssl); Foundation.close(fd)
            throw error
        }
        guard let remote = TLSCertificate.peerEndpoint(ssl), let protocolName = selectedProtocol(ssl) else {
            SSL_free(ssl); Foundation.close(fd)
            throw LinkFailure.handshake
        }
        return LinkConnection(ssl: ssl, fd: fd, context: context, remote: remote, protocolName: protocolName,
                              deadline: connectionDeadline, messageSeconds: deadlines.messageSeconds)
    }

    /// Repeats a non-blocking OpenSSL call until it returns 1, waiting with `poll()` for what it needs until `until`.
    /// Throws `failure` when OpenSSL fails, `timeout` at the deadline, `stopped` on SIGTERM/SIGINT.
    private static func drive(_ ssl: OpaquePointer, fd: Int32, until: Date, failure: LinkFailure, _ call: () -> Int32) throws {
        while true {
            let rc = call()
            if rc == 1 { return }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ: try Socket.wait(fd, for: Int16(POLLIN), until: until)
            case SSL_ERROR_WANT_WRITE: try Socket.wait(fd, for: Int16(POLLOUT), until: until)
            default:
                ERR_clear_error()
                throw failure
            }
        }
    }

    private static func selectedProtocol(_ ssl: OpaquePointer) -> LinkProtocolName? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return LinkProtocolName(rawValue: String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self))
    }

    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN); return () }()

    // MARK: Frames

    /// Sends one message.
    public func send(_ message: JSON) throws {
        try sendFrame(Array(message.rendered().utf8))
    }

    /// Sends raw frame bytes (the body after the length); also used by tests to play a hostile peer.
    public func sendFrame(_ body: [UInt8]) throws {
        var length = UInt32(body.count).bigEndian
        var frame = withUnsafeBytes(of: &length) { Array($0) }
        frame += body
        try writeAll(frame)
    }

    /// Sends arbitrary bytes as they are (tests: truncated frames, lying lengths).
    public func sendBytes(_ bytes: [UInt8]) throws { try writeAll(bytes) }

    /// Receives one message.
    public func receive() throws -> LinkMessage {
        let body = try receiveFrame()
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { throw LinkFailure.malformed }
        return try LinkMessage(fields: object)
    }

    /// Receives one frame's body as raw bytes (the JSON text), checking only the length.
    public func receiveFrame() throws -> [UInt8] {
        // The whole frame, length and body, is one message with one deadline.
        let until = messageDeadline
        let header = try readExactly(4, until: until)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= LinkConnection.maxFrame else { throw LinkFailure.oversize }
        return try readExactly(length, until: until)
    }

    /// Closes the connection (TLS close_notify, then the socket).
    public func close() {
        guard !closed else { return }
        closed = true
        // Best effort and non-blocking: a peer that does not read cannot hold the close.
        if !broken { SSL_shutdown(ssl) }
        SSL_free(ssl)
        Foundation.close(fd)
        ERR_clear_error()
    }

    /// The end of the message starting now: `messageSeconds` from now, or the connection deadline if sooner.
    private var messageDeadline: Date { min(Date().addingTimeInterval(messageSeconds), deadline) }

    private func writeAll(_ bytes: [UInt8]) throws {
        let until = messageDeadline
        try bytes.withUnsafeBytes { buffer in
            // One buffer for every retry: OpenSSL wants a repeated non-blocking write to pass the same pointer.
            var offset = 0
            while offset < buffer.count {
                var written = 0
                do {
                    try LinkConnection.drive(ssl, fd: fd, until: until, failure: .io) {
                        SSL_write_ex(ssl, buffer.baseAddress! + offset, buffer.count - offset, &written)
                    }
                } catch LinkFailure.io {
                    broken = true
                    throw LinkFailure.io
                }
                offset += written
            }
        }
    }

    private func readExactly(_ count: Int, until: Date) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            var read = 0
            do {
                try buffer.withUnsafeMutableBytes { raw in
                    try LinkConnection.drive(ssl, fd: fd, until: until, failure: .truncated) {
                        SSL_read_ex(ssl, raw.baseAddress! + offset, count - offset, &read)
                    }
                }
            } catch LinkFailure.truncated {
                broken = true
                throw LinkFailure.truncated
            }
            offset += read
        }
        return buffer
    }
}
