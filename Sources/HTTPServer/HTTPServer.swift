import CMicroHTTPD
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on GNU libmicrohttpd: an epoll thread pool answering requests through one handler.
///
/// The handler is called on the pool's threads, several at once: it must keep no state of its own between
/// requests (open what it needs per request). Bodies are collected up to `limits.maxBodyBytes` before the
/// handler sees them; larger ones get 413 and the connection is closed. Keep-alive is libmicrohttpd's.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPServerRequest) -> HTTPServerResponse

    public let limits: HTTPServerLimits
    let handler: Handler
    // Set once in init, cleared once in stop (under `lock`).
    private var daemon: OpaquePointer?
    private let lock = NSLock()

    public struct StartFailure: Error, Sendable {}

    /// Starts answering on `socket` (which the server then owns and closes in `stop`).
    public init(socket: ListeningSocket, limits: HTTPServerLimits, handler: @escaping Handler) throws {
        self.limits = limits
        self.handler = handler
        let me = Unmanaged.passUnretained(self).toOpaque()
        daemon = mhd_shim_start(
            socket.descriptor, UInt32(max(1, limits.threads)), UInt32(max(1, limits.maxConnections)),
            UInt32(max(0, limits.maxConnectionsPerAddress)), UInt32(max(1, limits.idleTimeoutSeconds)), max(4096, limits.maxHeaderBytes),
            { cls, connection, url, method, _, uploadData, uploadDataSize, state in
                guard let cls, let connection, let uploadDataSize, let state else { return .NO }
                return Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
                    .access(connection, url: url, method: method, upload: uploadData, uploadSize: uploadDataSize, state: state)
            }, me,
            { _, _, state, _ in
                guard let state, let pointer = state.pointee else { return }
                Unmanaged<PendingRequest>.fromOpaque(pointer).release()
                state.pointee = nil
            }, nil)
        if daemon == nil {
            close(socket.descriptor)
            throw StartFailure()
        }
    }

    /// Stops accepting, closes every connection and the listening socket; returns once no handler runs.
    public func stop() {
        let running: OpaquePointer? = lock.withLock {
            let running = daemon
            daemon = nil
            return running
        }
        if let running {
            let fd = MHD_quiesce_daemon(running)
            MHD_stop_daemon(running)
            if fd >= 0 { close(fd) }
        }
    }

    deinit { stop() }

    /// One request being received on a connection (touched only by the pool thread serving that connection).
    final class PendingRequest {
        let method: String
        let path: String
        let headers: [String: String]
        let deadline: timespec
        var body: [UInt8] = []
        var tooLarge = false
        var answered = false

        init(method: String, path: String, headers: [String: String], deadline: timespec) {
            self.method = method
            self.path = path
            self.headers = headers
            self.deadline = deadline
        }
    }

    private func access(_ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, upload: UnsafePointer<CChar>?,
                        uploadSize: UnsafeMutablePointer<Int>, state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let pointer = state.pointee else {
            // Headers are in: start the request, refusing an announced oversized body before any of it is read.
            let headers = Self.headers(of: connection)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            now.tv_sec += limits.requestTimeoutSeconds
            let pending = PendingRequest(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                                         headers: headers, deadline: now)
            state.pointee = Unmanaged.passRetained(pending).toOpaque()
            if let length = headers["content-length"], let announced = Int(length), announced > limits.maxBodyBytes {
                pending.answered = true
                return queue(Self.tooLarge, on: connection)
            }
            return .YES
        }
        let pending = Unmanaged<PendingRequest>.fromOpaque(pointer).takeUnretainedValue()
        if pending.answered {
            uploadSize.pointee = 0
            return .YES
        }
        if uploadSize.pointee > 0 {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            // Trickled bytes never extend the request's deadline: past it the connection is cut.
            if now.tv_sec > pending.deadline.tv_sec || (now.tv_sec == pending.deadline.tv_sec && now.tv_nsec >= pending.deadline.tv_nsec) {
                return .NO
            }
            let size = uploadSize.pointee
            if pending.tooLarge || pending.body.count + size > limits.maxBodyBytes {
                pending.tooLarge = true
                pending.body = []
            } else if let upload {
                upload.withMemoryRebound(to: UInt8.self, capacity: size) { pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size)) }
            }
            uploadSize.pointee = 0
            return .YES
        }
        pending.answered = true
        if pending.tooLarge { return queue(Self.tooLarge, on: connection) }
        let path = pending.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? pending.path
        let response = handler(HTTPServerRequest(method: pending.method, path: path, headers: pending.headers, body: pending.body))
        return queue(response, on: connection)
    }

    static let tooLarge = HTTPServerResponse(status: 413, headers: [("Content-Type", "application/json"), ("Connection", "close")],
                                             body: Array("{\"error\":\"body-too-large\"}".utf8))

    private func queue(_ answer: HTTPServerResponse, on connection: OpaquePointer) -> MHD_Result {
        var body = answer.body
        let response = body.withUnsafeMutableBytes { MHD_create_response_from_buffer($0.count, $0.baseAddress, MHD_ResponseMemoryMode(rawValue: 2)!) }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }

    /// The request's headers, names lower-cased.
    private static func headers(of connection: OpaquePointer) -> [String: String] {
        final class Collected { var headers: [String: String] = [:] }
        let collected = Collected()
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let box = Unmanaged<Collected>.fromOpaque(cls).takeUnretainedValue()
                let name = String(cString: key).lowercased()
                let text = value.map { String(cString: $0) } ?? ""
                if let existing = box.headers[name] { box.headers[name] = existing + ", " + text } else { box.headers[name] = text }
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.headers
    }
}
