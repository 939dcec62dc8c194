import Elapsed
import Foundation

/// One QUIC connection's exchange stream as a worker thread sees it: blocking reads and writes, each bounded by an
/// absolute deadline and the caller's stop condition.
///
/// The endpoint's event-loop thread owns the ngtcp2 connection; this object is the only thing the two threads
/// share. The worker queues bytes to send, a FIN, flow-control credit and a close here; the loop moves them into
/// ngtcp2 and moves received bytes, the peer's FIN and the end of the connection back, all under one lock, and
/// wakes the other side (a condition variable for the worker, an eventfd for the loop).
package final class QUICConnection: @unchecked Sendable {
    private let condition = NSCondition()
    private let wake: @Sendable () -> Void
    private let shouldStop: @Sendable () -> Bool

    // Set once by the loop when the handshake completes.
    private var _remoteKey: [UInt8] = []
    private var _protocolName = ""
    private var established = false
    /// Where the connection comes from (the peer's UDP address).
    package let remoteAddress: QUICAddress
    /// Serving: the handshake deadline, counted from the connection's first packet (distant future when dialling).
    package let handshakeDeadline: MonotonicInstant
    /// The clock every QUIC deadline is an instant of: monotonic, so a wall-clock step moves none of them
    /// (docs/design.md §2, "Clocks").
    package static let clock = MonotonicClock.system

    // Loop → worker.
    private var inbound: [UInt8] = []
    private var inboundStart = 0
    private var peerFinished = false
    private var endError: QUICError?
    private var unacked = 0

    // Worker → loop.
    private var outbound: [UInt8] = []
    private var finishWanted = false
    private var finishTaken = false
    private var closeCode: UInt64?
    private var credit = 0

    /// Bytes queued but not yet acknowledged above which `write` waits.
    static let sendWindow = 512 * 1024

    init(remoteAddress: QUICAddress, handshakeDeadline: MonotonicInstant = .distantFuture, wake: @escaping @Sendable () -> Void,
         shouldStop: @escaping @Sendable () -> Bool) {
        self.remoteAddress = remoteAddress
        self.handshakeDeadline = handshakeDeadline
        self.wake = wake
        self.shouldStop = shouldStop
    }

    /// The peer's 32-byte Ed25519 key (its endpoint id), checked by TLS.
    package var remoteKey: [UInt8] { condition.lock(); defer { condition.unlock() }; return _remoteKey }
    /// The protocol ALPN chose.
    package var protocolName: String { condition.lock(); defer { condition.unlock() }; return _protocolName }

    /// Whether the connection has ended (closed by either side, reset, timed out).
    package var isEnded: Bool { condition.lock(); defer { condition.unlock() }; return endError != nil }

    // MARK: Worker side

    /// Receives at least one and at most `max` bytes of the stream. Throws `finished` when the peer finished its side
    /// first, `closed` when the connection ended, `timeout` at `deadline`, `stopped` when the stop condition holds.
    package func read(max: Int, until deadline: MonotonicInstant) throws -> [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        while true {
            let available = inbound.count - inboundStart
            if available > 0 {
                let count = min(max, available)
                let bytes = Array(inbound[inboundStart..<(inboundStart + count)])
                inboundStart += count
                if inboundStart == inbound.count { inbound.removeAll(keepingCapacity: true); inboundStart = 0 }
                credit += count
                wake()
                return bytes
            }
            if peerFinished { throw QUICError.finished }
            if let endError { throw endError }
            try waitSlice(until: deadline)
        }
    }

    /// Queues `bytes` on the stream; waits (until `deadline`) only while more than `sendWindow` bytes are unacknowledged.
    package func write(_ bytes: [UInt8], until deadline: MonotonicInstant) throws {
        condition.lock()
        defer { condition.unlock() }
        if let endError { throw endError }
        guard !finishWanted else { throw QUICError.io }
        outbound += bytes
        wake()
        while outbound.count + unacked > QUICConnection.sendWindow {
            if let endError { throw endError }
            try waitSlice(until: deadline)
        }
    }

    /// Finishes our side of the stream (FIN after the queued bytes).
    package func finish() {
        condition.lock()
        finishWanted = true
        condition.unlock()
        wake()
    }

    /// Ends the connection: finishes our side, waits until the peer acknowledged everything sent (or `linger` passes,
    /// or the peer went away), then closes with application code `code`. Returns at once for a dead connection.
    package func close(code: UInt64 = 0, linger: MonotonicInstant) {
        condition.lock()
        finishWanted = true
        wake()
        while endError == nil && (outbound.count > 0 || unacked > 0 || !finishTaken) && !Self.clock.hasPassed(linger) && !shouldStop() {
            _ = condition.wait(until: Self.clock.wakeDate(for: linger, atMost: 0.25))
        }
        if closeCode == nil { closeCode = code }
        condition.unlock()
        wake()
        awaitEnd()
    }

    /// Closes at once with `code`, dropping anything unsent; returns once the CONNECTION_CLOSE has left (at most
    /// a second), so a process may exit right after.
    package func abort(code: UInt64 = 0) {
        condition.lock()
        if closeCode == nil { closeCode = code }
        condition.unlock()
        wake()
        awaitEnd()
    }

    /// Waits (at most a second) for the loop to have sent the close and forgotten the connection.
    private func awaitEnd() {
        let until = Self.clock.deadline(in: 1)
        condition.lock()
        while endError == nil && !Self.clock.hasPassed(until) { _ = condition.wait(until: Self.clock.wakeDate(for: until, atMost: 0.25)) }
        condition.unlock()
    }

    /// Waits until the peer finished its side or the connection ended, by `deadline` (a server lingering for the
    /// client to close first). Never throws.
    package func waitForPeer(until deadline: MonotonicInstant) {
        condition.lock()
        defer { condition.unlock() }
        while !peerFinished && endError == nil && !Self.clock.hasPassed(deadline) && !shouldStop() {
            _ = condition.wait(until: Self.clock.wakeDate(for: deadline, atMost: 0.25))
        }
    }

    /// Waits for the TLS handshake (dialler). Throws how it failed.
    func waitEstablished(until deadline: MonotonicInstant) throws {
        condition.lock()
        defer { condition.unlock() }
        while !established {
            if let endError { throw endError }
            try waitSlice(until: deadline)
        }
    }

    /// One wait of at most 250 ms, so the stop condition is heard; throws at the deadline or on stop.
    private func waitSlice(until deadline: MonotonicInstant) throws {
        if shouldStop() { throw QUICError.stopped }
        guard !Self.clock.hasPassed(deadline) else { throw QUICError.timeout }
        _ = condition.wait(until: Self.clock.wakeDate(for: deadline, atMost: 0.25))
    }

    // MARK: Loop side

    /// What the worker asked for since the last call.
    struct Requests {
        var bytes: [UInt8]
        var finish: Bool
        var close: UInt64?
        var credit: Int
    }

    /// Whether the worker asked for anything the loop has not taken yet (a cheap check before servicing).
    var hasRequests: Bool {
        condition.lock(); defer { condition.unlock() }
        return !outbound.isEmpty || (finishWanted && !finishTaken) || closeCode != nil || credit > 0
    }

    func takeRequests() -> Requests {
        condition.lock()
        defer { condition.unlock() }
        let requests = Requests(bytes: outbound, finish: finishWanted && !finishTaken, close: closeCode, credit: credit)
        outbound.removeAll(keepingCapacity: true)
        if finishWanted { finishTaken = true }
        credit = 0
        return requests
    }

    func markEstablished(remoteKey: [UInt8], protocolName: String) {
        condition.lock()
        _remoteKey = remoteKey
        _protocolName = protocolName
        established = true
        condition.broadcast()
        condition.unlock()
    }

    func deliver(_ bytes: [UInt8], finished: Bool, unacked: Int) {
        condition.lock()
        if !bytes.isEmpty { inbound += bytes }
        if finished { peerFinished = true }
        self.unacked = unacked
        condition.broadcast()
        condition.unlock()
    }

    func markEnded(_ error: QUICError) {
        condition.lock()
        if endError == nil { endError = error }
        condition.broadcast()
        condition.unlock()
    }
}
