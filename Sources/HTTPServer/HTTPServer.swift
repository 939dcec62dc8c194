import CMicroHTTPD
import Elapsed
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on GNU libmicrohttpd: an epoll thread pool does all the I/O, and a fixed pool of worker
/// threads runs the handler on complete requests only.
///
/// A request is read (headers, then the body up to `limits.maxBodyBytes`) by the I/O threads without ever
/// blocking; once complete, its connection is suspended and the request handed to a worker; the worker's answer
/// resumes the connection and is sent. So a slow or idle client holds a connection slot (until its deadlines cut
/// it: `ConnectionDeadlines`, absolute, never extended by trickled bytes), never a worker, and a handler that blocks (on the store) holds one worker, never the I/O of other
/// connections. The handler is called on several workers at once: it must keep no state of its own between
/// requests. Larger bodies get 413 and the connection is closed. Keep-alive is libmicrohttpd's.
package final class HTTPServer: Sendable {
    package typealias Handler = @Sendable (HTTPServerRequest) -> HTTPServerResponse
    /// Answers a request once: the connection is resumed and the response sent. Callable from any thread.
    package typealias Responder = @Sendable (HTTPServerResponse) -> Void
    /// A handler that may answer later, from another thread (a store writer answering after its commit), so the
    /// worker is free for the next request meanwhile. It must call the responder exactly once.
    package typealias DeferredHandler = @Sendable (HTTPServerRequest, @escaping Responder) -> Void

    package let limits: HTTPServerLimits
    private let daemon: Daemon

    package struct StartFailure: Error, Sendable {}

    /// Starts answering on `socket` (which the server then owns and closes in `stop`).
    package convenience init(socket: ListeningSocket, limits: HTTPServerLimits, handler: @escaping Handler) throws {
        try self.init(socket: socket, limits: limits, deferredHandler: { request, respond in respond(handler(request)) })
    }

    /// Starts answering on `socket`, each request answered whenever its handler calls the responder.
    package init(socket: ListeningSocket, limits: HTTPServerLimits, deferredHandler handler: @escaping DeferredHandler) throws {
        self.limits = limits
        daemon = try Daemon(socket: socket, limits: limits, handler: handler)
    }

    /// Stops accepting, lets the workers answer what they hold (for `limits.drainTimeoutSeconds` at most), closes
    /// every connection and the listening socket. A request still unanswered then gets 503.
    package func stop() { daemon.stop() }

    /// Dropping the server stops it.
    deinit { daemon.stop() }
}

/// The libmicrohttpd daemon and everything its callbacks reach.
///
/// libmicrohttpd is handed a retained reference to this object (its callbacks' closure argument) at start, which
/// `stop` releases only once `MHD_stop_daemon` has returned: no callback can reach a freed object, whenever the
/// owner drops its `HTTPServer`. The daemon is always stopped: handlers still holding requests when the drain
/// times out have those requests answered 503 and their connections resumed (libmicrohttpd must not be stopped
/// with a suspended connection), and their own later answers change nothing.
final class Daemon: @unchecked Sendable {
    let limits: HTTPServerLimits
    let handler: HTTPServer.DeferredHandler
    private let lock = NSLock()
    // Set once in init, cleared once in stop (under `lock`).
    private var daemon: OpaquePointer?
    private let work = WorkQueue()
    let deadlines: ConnectionDeadlines
    private var workers: [Thread] = []

    /// Starts answering on `socket`, each request answered whenever its handler calls the responder.
    init(socket: ListeningSocket, limits: HTTPServerLimits, handler: @escaping HTTPServer.DeferredHandler) throws {
        self.limits = limits
        self.handler = handler
        deadlines = ConnectionDeadlines(headerTimeoutSeconds: limits.headerTimeoutSeconds, requestTimeoutSeconds: limits.requestTimeoutSeconds)
        // libmicrohttpd's reference: released in `stop` after MHD_stop_daemon, or below when the daemon did not start.
        let retained = Unmanaged.passRetained(self)
        let me = retained.toOpaque()
        let ioThreads = UInt32(max(1, min(4, (limits.threads + 1) / 2)))
        daemon = mhd_shim_start(
            socket.descriptor, ioThreads, UInt32(max(1, limits.maxConnections)),
            UInt32(max(0, limits.maxConnectionsPerAddress)), UInt32(max(1, limits.idleTimeoutSeconds)), max(4096, limits.maxHeaderBytes),
            { cls, connection, url, method, version, uploadData, uploadDataSize, state in
                guard let cls, let connection, let uploadDataSize, let state else { return .NO }
                return Unmanaged<Daemon>.fromOpaque(cls).takeUnretainedValue()
                    .access(connection, url: url, method: method, version: version, upload: uploadData, uploadSize: uploadDataSize, state: state)
            }, me,
            { cls, connection, state, _ in
                if let cls, let connection {
                    Unmanaged<Daemon>.fromOpaque(cls).takeUnretainedValue().deadlines.requestEnded(connection, now: ConnectionDeadlines.now())
                }
                guard let state, let pointer = state.pointee else { return }
                let pending = Unmanaged<PendingRequest>.fromOpaque(pointer)
                // A request a worker answered is over once its response was sent (or its connection closed).
                if pending.takeUnretainedValue().dispatched, let cls {
                    Unmanaged<Daemon>.fromOpaque(cls).takeUnretainedValue().work.completed(pending.takeUnretainedValue())
                }
                pending.release()
                state.pointee = nil
            }, me,
            { cls, connection, _, code in
                guard let cls, let connection else { return }
                let deadlines = Unmanaged<Daemon>.fromOpaque(cls).takeUnretainedValue().deadlines
                if code.rawValue == 0 {  // MHD_CONNECTION_NOTIFY_STARTED = 0 (microhttpd.h); else MHD_CONNECTION_NOTIFY_CLOSED
                    deadlines.started(connection, descriptor: mhd_shim_connection_fd(connection), now: ConnectionDeadlines.now())
                } else {
                    deadlines.closed(connection)
                }
            }, me)
        if daemon == nil {
            retained.release()
            close(socket.descriptor)
            throw HTTPServer.StartFailure()
        }
        deadlines.start()
        for index in 0..<max(1, limits.threads) {
            let thread = Thread { [work, handler] in
                while let item = work.next() {
                    handler(item.pending.request()) { response in
                        item.pending.answer(response) { MHD_resume_connection(item.connection.pointer) }
                    }
                }
            }
            thread.name = "http-worker-\(index)"
            workers.append(thread)
            thread.start()
        }
    }

    /// Stops accepting, lets the workers answer what they hold, answers 503 to what they still hold after the
    /// drain, closes every connection and the listening socket, and stops the daemon.
    func stop() {
        let running: OpaquePointer? = lock.withLock {
            let running = daemon
            daemon = nil
            return running
        }
        guard let running else { return }
        let fd = MHD_quiesce_daemon(running)
        if fd >= 0 { close(fd) }
        // No new work from here on (a request completing now is answered 503 by its I/O thread); what is queued
        // or running is answered first.
        work.finish()
        if !work.drain(timeout: limits.drainTimeoutSeconds) {
            // A handler still holds a request (its connection suspended): it is answered 503 and resumed here, the
            // answer and the resume under the request's lock, as a worker's are, so once this loop is done no
            // connection is suspended and none will be resumed later. The 503s get a moment to be sent.
            for item in work.abandon() {
                item.pending.answer(Self.unavailable) { MHD_resume_connection(item.connection.pointer) }
            }
            _ = work.awaitSent(timeout: 1)
        }
        deadlines.stop()
        MHD_stop_daemon(running)
        // No callback runs any more: libmicrohttpd's reference goes.
        Unmanaged.passUnretained(self).release()
    }

    /// One request being received on a connection. Read and written by the I/O thread serving that connection,
    /// except `response`, which a worker sets before resuming the connection (under `lock`).
    final class PendingRequest: @unchecked Sendable {
        let method: String
        let path: String
        let headers: [String: String]
        let peer: String
        /// When the whole request must be complete (`ConnectionDeadlines`, monotonic nanoseconds).
        let deadline: UInt64
        var body: [UInt8] = []
        var tooLarge = false
        var queued = false
        var dispatched = false
        private let lock = NSLock()
        private var response: HTTPServerResponse?

        init(method: String, path: String, headers: [String: String], peer: String, deadline: UInt64) {
            self.method = method
            self.path = path
            self.headers = headers
            self.peer = peer
            self.deadline = deadline
        }

        func request() -> HTTPServerRequest {
            let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
            return HTTPServerRequest(method: method, path: bare, headers: headers, body: body, peer: peer)
        }

        /// Sets the response and then calls `resume`, both under the lock; false (and nothing changes, nothing is
        /// called) when a response was set already.
        @discardableResult
        func answer(_ response: HTTPServerResponse, then resume: () -> Void = {}) -> Bool {
            lock.withLock {
                guard self.response == nil else { return false }
                self.response = response
                resume()
                return true
            }
        }
        var answered: HTTPServerResponse? { lock.withLock { response } }
    }

    private func access(_ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
                        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
                        state: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let pointer = state.pointee else {
            // Headers are in: start the request, refusing an announced oversized body before any of it is read.
            let (headers, counts) = Self.headers(of: connection)
            let deadline = deadlines.headersArrived(connection, now: ConnectionDeadlines.now())
            let pending = PendingRequest(method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "/",
                                         headers: headers, peer: Self.peer(of: connection), deadline: deadline)
            state.pointee = Unmanaged.passRetained(pending).toOpaque()
            if Self.isMalformed(headers: headers, counts: counts, version: version.map { String(cString: $0) } ?? "") {
                pending.queued = true
                deadlines.answering(connection)
                return queue(Self.badRequest, on: connection)
            }
            if let length = headers["content-length"], let announced = Int(length), announced > limits.maxBodyBytes {
                pending.queued = true
                deadlines.answering(connection)
                return queue(Self.tooLarge, on: connection)
            }
            return .YES
        }
        let pending = Unmanaged<PendingRequest>.fromOpaque(pointer).takeUnretainedValue()
        if pending.queued {
            uploadSize.pointee = 0
            return .YES
        }
        if uploadSize.pointee > 0 {
            // Trickled bytes never extend the request's deadline: past it the connection is cut.
            if ConnectionDeadlines.now() >= pending.deadline { return .NO }
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
        deadlines.answering(connection)
        if pending.tooLarge {
            pending.queued = true
            return queue(Self.tooLarge, on: connection)
        }
        if let response = pending.answered {
            pending.queued = true
            return queue(response, on: connection)
        }
        guard !pending.dispatched else { return .YES }
        // Complete: a worker answers it while the connection waits, suspended.
        MHD_suspend_connection(connection)
        guard work.add(WorkItem(pending: pending, connection: ConnectionPointer(pointer: connection))) else {
            MHD_resume_connection(connection)
            pending.answer(Self.unavailable)
            return .YES
        }
        pending.dispatched = true
        return .YES
    }

    /// The framing nginx refuses and libmicrohttpd lets through, refused with 400 before any body is read (RFC 9112):
    /// HTTP/1.1 without `Host` (§3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
    /// request message that lacks a Host header field"), more than one `Content-Length` (a request-smuggling shape),
    /// and a `Transfer-Encoding` other than exactly `chunked` (§6.1: chunked must be the final coding; this server
    /// decodes no other coding).
    static func isMalformed(headers: [String: String], counts: [String: Int], version: String) -> Bool {
        if version == "HTTP/1.1" && headers["host"] == nil { return true }
        if (counts["content-length"] ?? 0) > 1 || (counts["host"] ?? 0) > 1 { return true }
        if let coding = headers["transfer-encoding"] {
            if (counts["transfer-encoding"] ?? 0) > 1 || coding.trimmingCharacters(in: .whitespaces).lowercased() != "chunked" { return true }
        }
        return false
    }

    static let badRequest = HTTPServerResponse(status: 400, headers: [("Content-Type", "application/json"), ("Connection", "close")],
                                               body: Array("{\"error\":\"bad-request\"}".utf8))
    static let tooLarge = HTTPServerResponse(status: 413, headers: [("Content-Type", "application/json"), ("Connection", "close")],
                                             body: Array("{\"error\":\"body-too-large\"}".utf8))
    static let unavailable = HTTPServerResponse(status: 503, headers: [("Content-Type", "application/json"), ("Connection", "close")],
                                                body: Array("{\"error\":\"shutting-down\"}".utf8))

    private func queue(_ answer: HTTPServerResponse, on connection: OpaquePointer) -> MHD_Result {
        var body = answer.body
        let response = body.withUnsafeMutableBytes { MHD_create_response_from_buffer($0.count, $0.baseAddress, MHD_ResponseMemoryMode(rawValue: 2)!) }
        guard let response else { return .NO }
        defer { MHD_destroy_response(response) }
        for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
        return MHD_queue_response(connection, UInt32(answer.status), response)
    }

    /// The connection's peer address as text, or "" when libmicrohttpd gives none.
    private static func peer(of connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard mhd_shim_client_address(connection, &buffer, socklen_t(buffer.count)) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The request's headers, names lower-cased (repeated ones joined with `, `), and how often each name came.
    private static func headers(of connection: OpaquePointer) -> (headers: [String: String], counts: [String: Int]) {
        final class Collected { var headers: [String: String] = [:]; var counts: [String: Int] = [:] }
        let collected = Collected()
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values(connection, .HEADER_KIND, { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let box = Unmanaged<Collected>.fromOpaque(cls).takeUnretainedValue()
                let name = String(cString: key).lowercased()
                let text = value.map { String(cString: $0) } ?? ""
                if let existing = box.headers[name] { box.headers[name] = existing + ", " + text } else { box.headers[name] = text }
                box.counts[name, default: 0] += 1
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return (collected.headers, collected.counts)
    }
}

/// A suspended connection handed to a worker; only `MHD_resume_connection` touches it off the I/O thread.
struct ConnectionPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A complete request waiting for a worker.
struct WorkItem: Sendable {
    let pending: Daemon.PendingRequest
    let connection: ConnectionPointer
}

/// The workers' queue: FIFO; at shutdown it refuses new items, `drain` waits for the queued ones, and `abandon`
/// gives up on what is left.
// @unchecked: every stored property is read and written only while `condition` is locked.
final class WorkQueue: @unchecked Sendable {
    /// The clock the drain deadlines are timed on.
    private let clock = MonotonicClock.system
    private let condition = NSCondition()
    private var items: [WorkItem] = []
    private var head = 0
    private var busy = 0
    /// Requests queued for a worker whose response was not yet sent (nor their connection closed).
    private var held: [ObjectIdentifier: WorkItem] = [:]
    private var finished = false

    /// Queues `item`; false once the queue is finished.
    func add(_ item: WorkItem) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !finished else { return false }
        items.append(item)
        held[ObjectIdentifier(item.pending)] = item
        condition.signal()
        return true
    }

    /// The next item (blocking), or nil once finished and empty. Marks the caller busy until its next call.
    func next() -> WorkItem? {
        condition.lock()
        defer { condition.unlock() }
        busy = max(0, busy - 1)
        condition.broadcast()
        while head == items.count && !finished { condition.wait() }
        guard head < items.count else { return nil }  // finished and empty
        let item = items[head]
        head += 1
        if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        busy += 1
        return item
    }

    /// A queued request's response was sent, or its connection closed (libmicrohttpd's completion callback).
    func completed(_ pending: Daemon.PendingRequest) {
        condition.lock()
        held.removeValue(forKey: ObjectIdentifier(pending))
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every queued request was answered and its response sent (at most `timeout` seconds); false when
    /// some were not.
    func drain(timeout: TimeInterval) -> Bool {
        let deadline = clock.deadline(in: timeout)
        condition.lock()
        defer { condition.unlock() }
        while head < items.count || busy > 0 || !held.isEmpty, !clock.hasPassed(deadline) {
            _ = condition.wait(until: clock.wakeDate(for: deadline, atMost: 0.25))
        }
        return head == items.count && busy == 0 && held.isEmpty
    }

    /// Drops what is still queued (the workers end once their handlers return) and gives every request not yet
    /// sent, queued or held by a handler, for the caller to answer.
    func abandon() -> [WorkItem] {
        condition.lock()
        defer { condition.unlock() }
        items.removeAll()
        head = 0
        condition.broadcast()
        return Array(held.values)
    }

    /// Waits until every request's response was sent or its connection closed (at most `timeout` seconds).
    func awaitSent(timeout: TimeInterval) -> Bool {
        let deadline = clock.deadline(in: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !held.isEmpty, !clock.hasPassed(deadline) {
            _ = condition.wait(until: clock.wakeDate(for: deadline, atMost: 0.25))
        }
        return held.isEmpty
    }

    /// Refuses new items; the workers end once the queued ones are answered.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }
}
