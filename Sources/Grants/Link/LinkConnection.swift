import COpenSSL
import Foundation
import Runner

/// One authenticated link connection: mutual TLS 1.3 over TCP, then length-prefixed JSON messages.
///
/// Each frame is a 4-byte big-endian length and that many bytes of one JSON object, at most 64 KiB. An oversize,
/// truncated or malformed frame throws a `LinkFailure`, and the caller closes the connection having written nothing.
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
    /// When set, no read or write starts after this instant: a peer trickling bytes cannot hold the connection.
    var deadline: Date?

    private init(ssl: OpaquePointer, fd: Int32, context: TLSContext, remote: EndpointID, protocolName: LinkProtocolName) {
        self.ssl = ssl
        self.fd = fd
        self.context = context
        self.remote = remote
        self.protocolName = protocolName
    }

    deinit { close() }

    /// Dials `address`, requiring TLS 1.3 with `protocolName` and a server whose key is `expected`.
    public static func dial(_ address: LinkAddress, expected: EndpointID, protocolName: LinkProtocolName, identity: NodeIdentity,
                            connectTimeout: Int, ioTimeout: Int = 10) throws -> LinkConnection {
        ignoreSIGPIPE
        let fd = try Socket.connect(address, timeout: connectTimeout)
        // The handshake gets the connect timeout too: a stale address that accepts TCP but never speaks TLS fails fast.
        Socket.setTimeouts(fd, seconds: connectTimeout)
        let context: TLSContext
        do { context = try TLSContext(identity: identity, role: .client) } catch { Foundation.close(fd); throw error }
        guard let ssl = SSL_new(context.pointer) else { Foundation.close(fd); throw JobError.internal("cannot create a TLS session") }
        let alpn = protocolName.wire
        guard SSL_set_fd(ssl, fd) == 1, SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count)) == 0 else {
            SSL_free(ssl); Foundation.close(fd)
            throw JobError.internal("cannot configure the TLS session")
        }
        if SSL_connect(ssl) != 1 {
            let timedOut = errno == EAGAIN || errno == EWOULDBLOCK
            ERR_clear_error(); SSL_free(ssl); Foundation.close(fd)
            throw timedOut ? LinkFailure.timeout : LinkFailure.handshake
        }
        guard let remote = TLSCertificate.peerEndpoint(ssl), selectedProtocol(ssl) == protocolName else {
            SSL_free(ssl); Foundation.close(fd)
            throw LinkFailure.handshake
        }
        Socket.setTimeouts(fd, seconds: ioTimeout)
        let connection = LinkConnection(ssl: ssl, fd: fd, context: context, remote: remote, protocolName: protocolName)
        guard remote == expected else {
            connection.close()
            throw LinkFailure.wrongPeer
        }
        return connection
    }

    /// Completes the server side of a connection already accepted on `fd` (which the connection then owns).
    static func accept(fd: Int32, context: TLSContext, ioTimeout: Int = 10) throws -> LinkConnection {
        ignoreSIGPIPE
        Socket.setTimeouts(fd, seconds: ioTimeout)
        guard let ssl = SSL_new(context.pointer) else { Foundation.close(fd); throw JobError.internal("cannot create a TLS session") }
        guard SSL_set_fd(ssl, fd) == 1 else { SSL_free(ssl); Foundation.close(fd); throw JobError.internal("cannot configure the TLS session") }
        if SSL_accept(ssl) != 1 {
            let timedOut = errno == EAGAIN || errno == EWOULDBLOCK
            ERR_clear_error(); SSL_free(ssl); Foundation.close(fd)
            throw timedOut ? LinkFailure.timeout : LinkFailure.handshake
        }
        guard let remote = TLSCertificate.peerEndpoint(ssl), let protocolName = selectedProtocol(ssl) else {
            SSL_free(ssl); Foundation.close(fd)
            throw LinkFailure.handshake
        }
        return LinkConnection(ssl: ssl, fd: fd, context: context, remote: remote, protocolName: protocolName)
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
        let header = try readExactly(4)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= LinkConnection.maxFrame else { throw LinkFailure.oversize }
        return try readExactly(length)
    }

    /// Closes the connection (TLS close_notify, then the socket).
    public func close() {
        guard !closed else { return }
        closed = true
        SSL_shutdown(ssl)
        SSL_free(ssl)
        Foundation.close(fd)
        ERR_clear_error()
    }

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            if let deadline, Date() >= deadline { throw LinkFailure.timeout }
            var written = 0
            let ok = bytes.withUnsafeBytes { SSL_write_ex(ssl, $0.baseAddress! + offset, bytes.count - offset, &written) }
            guard ok == 1 else {
                let timedOut = errno == EAGAIN || errno == EWOULDBLOCK
                ERR_clear_error()
                throw timedOut ? LinkFailure.timeout : LinkFailure.io
            }
            offset += written
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            if let deadline, Date() >= deadline { throw LinkFailure.timeout }
            var read = 0
            let ok = buffer.withUnsafeMutableBytes { SSL_read_ex(ssl, $0.baseAddress! + offset, count - offset, &read) }
            guard ok == 1 else {
                let error = SSL_get_error(ssl, 0)
                let timedOut = error == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EWOULDBLOCK)
                ERR_clear_error()
                throw timedOut ? LinkFailure.timeout : LinkFailure.truncated
            }
            offset += read
        }
        return buffer
    }
}
