import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Absolute deadlines for each open connection's request, which trickled bytes never extend (slowloris).
///
/// libmicrohttpd's own timeout is an idle timeout: every byte received restarts it, so a client sending one byte
/// every few seconds holds its connection for ever, and enough of them hold every slot. Here each connection's
/// clock starts when it begins waiting for a request (when it was accepted, or when the previous response on it
/// was sent): its headers must be complete within `headerTimeout` and the whole request (headers and body) within
/// `requestTimeout` of that start. A request a worker is answering, or whose response is being sent, has no
/// deadline here (the idle timeout covers a client that stops reading). A sweeper cuts overdue connections with
/// `shutdown(2)`: libmicrohttpd then reads end-of-file and closes the connection itself, on its own thread.
///
/// libmicrohttpd reports a connection's close (`MHD_CONNECTION_NOTIFY_CLOSED`) before it closes the socket, and
/// the entry is removed under the same lock the sweeper holds, so the sweeper never touches a descriptor that was
/// closed (or reused by another connection).
final class ConnectionDeadlines: Sendable {
    /// One connection: its socket, when its current request's clock started, and where that request is.
    struct Entry {
        let descriptor: Int32
        var started: UInt64
        var headersIn = false
        var answering = false
        var cut = false
    }

    let headerTimeout: UInt64
    let requestTimeout: UInt64
    /// The open connections by their libmicrohttpd handle, and whether the sweeper should end.
    private struct State {
        var entries: [UInt: Entry] = [:]
        var stopping = false
    }
    private let state = Mutex(State())

    /// Deadlines in seconds from the start of a connection's wait for a request.
    init(headerTimeoutSeconds: Int, requestTimeoutSeconds: Int) {
        headerTimeout = UInt64(max(1, headerTimeoutSeconds)) * 1_000_000_000
        requestTimeout = UInt64(max(1, requestTimeoutSeconds)) * 1_000_000_000
    }

    /// Nanoseconds on the monotonic clock.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    /// A connection was accepted: its first request's clock starts.
    func started(_ connection: OpaquePointer, descriptor: Int32, now: UInt64) {
        state.withLock { $0.entries[Self.key(connection)] = Entry(descriptor: descriptor, started: now) }
    }

    /// A connection is being closed (its socket is still open): forgotten.
    func closed(_ connection: OpaquePointer) {
        _ = state.withLock { $0.entries.removeValue(forKey: Self.key(connection)) }
    }

    /// A request's headers are complete; returns when its whole request must be complete.
    func headersArrived(_ connection: OpaquePointer, now: UInt64) -> UInt64 {
        state.withLock { state in
            guard var entry = state.entries[Self.key(connection)] else { return now + requestTimeout }
            entry.headersIn = true
            state.entries[Self.key(connection)] = entry
            return entry.started + requestTimeout
        }
    }

    /// The request is complete (or refused): it is being answered, with no deadline here.
    func answering(_ connection: OpaquePointer) {
        state.withLock { $0.entries[Self.key(connection)]?.answering = true }
    }

    /// The response was sent: the connection's clock restarts for its next request (keep-alive).
    func requestEnded(_ connection: OpaquePointer, now: UInt64) {
        state.withLock { state in
            guard var entry = state.entries[Self.key(connection)] else { return }
            entry.started = now
            entry.headersIn = false
            entry.answering = false
            state.entries[Self.key(connection)] = entry
        }
    }

    /// Cuts every connection past its deadline at `now`; returns how many were cut.
    @discardableResult
    func sweep(now: UInt64) -> Int {
        state.withLock { state in
            var cut = 0
            for (key, entry) in state.entries where !entry.answering && !entry.cut {
                let deadline = entry.started + (entry.headersIn ? requestTimeout : min(headerTimeout, requestTimeout))
                guard now >= deadline else { continue }
                shutdown(entry.descriptor, Int32(SHUT_RDWR))
                state.entries[key]?.cut = true
                cut += 1
            }
            return cut
        }
    }

    /// Starts the sweeper (every 200 ms).
    func start() {
        let thread = Thread { [self] in
            while !state.withLock({ $0.stopping }) {
                sweep(now: Self.now())
                usleep(200_000)
            }
        }
        thread.name = "http-deadlines"
        thread.start()
    }

    /// Stops the sweeper (it ends within 200 ms).
    func stop() {
        state.withLock { $0.stopping = true }
    }
}
