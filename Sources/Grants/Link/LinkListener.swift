import Elapsed
import Foundation
import QUIC
import Runner
import Synchronization

/// `serve-link`'s QUIC service on one UDP socket: the endpoint's event-loop thread completes handshakes under the
/// connection caps, and each connection whose handshake completed is served on a thread of its own over the shared
/// `LinkStore` (one writer for all connections, a pool of read connections).
///
/// A slot (`LinkSlots`) is taken once a connection's source address is validated (its Initial carries our Retry's
/// token, or its handshake completed) and given back when the connection ends: a handshake started without a token
/// holds no slot, so a forged source address cannot fill that address's slots; validated half-open handshakes count
/// against the caps and end at the handshake deadline, holding no thread and no store. Datagrams over the caps, and
/// garbage, are dropped before any state is made. When the whole table is full, a validated newcomer takes the slot of
/// the oldest half-open handshake, or else of the longest-idle served connection that has not proven a grant, or else
/// of a proven one idle between messages (`LinkActivity`).
final class LinkListener: QUICServerDelegate, Sendable {
    /// The serve-link context, for its logger (a `JobContext` stays on its thread).
    let context: JobContext.Reopening
    /// The store every connection reads and writes through.
    let store: LinkStore
    let deadlines: LinkDeadlines
    let slots: LinkSlots
    let maxConnections: Int?
    /// The counters, under one lock.
    private struct State {
        var admitted = 0
        var serving = 0
        var refused = 0
        var evicted = 0
        /// The connections being served, for making room.
        var live: [ObjectIdentifier: LinkActivity] = [:]
        var refusedSinceLog = 0
        /// When refusals were last logged (nil: never).
        var lastRefusalLog: MonotonicInstant?
        /// Failed or timed-out handshakes not yet logged, and when each category was last logged.
        var handshakeFailuresSinceLog: [LinkFailure: Int] = [:]
        var lastHandshakeFailureLog: [LinkFailure: MonotonicInstant] = [:]
    }
    private let state = Mutex(State())

    /// What one run did: connections served (handshake completed), and first packets dropped at the caps.
    struct Tally {
        var admitted = 0
        var refused = 0
        /// Served connections ended to make room for a newcomer.
        var evicted = 0
    }

    /// The clock idle times and log cadences are measured on (the slots' clock).
    var clock: MonotonicClock { slots.clock }

    init(context: JobContext, store: LinkStore, deadlines: LinkDeadlines, slots: LinkSlots, maxConnections: Int?) {
        self.context = context.reopening()
        self.store = store
        self.deadlines = deadlines
        self.slots = slots
        self.maxConnections = maxConnections
    }

    /// Serves on `endpoint` until SIGTERM/SIGINT, `maxConnections` admitted, or `idleExit` seconds with no open
    /// connection; then waits for the open connections to end and stops the endpoint.
    func run(_ endpoint: QUICEndpoint, idleExit: Int?) -> Tally {
        endpoint.start(delegate: self)
        StopSignals.wait(every: 0.05) {
            if store.isReplaced { return true }
            if let maxConnections, count(\.admitted) >= maxConnections { return true }
            if let idleExit, let idle = slots.idleSeconds, idle >= Double(idleExit) { return true }
            return false
        }
        // Every served connection ends by its deadlines at the latest, sooner once SIGTERM was heard; then the
        // endpoint drops the half-open ones (which hold no thread).
        while count(\.serving) > 0 { usleep(20_000) }
        endpoint.stop()
        let (unlogged, tally) = state.withLock { state in
            let unlogged = state.handshakeFailuresSinceLog.filter { $0.value > 0 }
            state.handshakeFailuresSinceLog = [:]
            return (unlogged, Tally(admitted: state.admitted, refused: state.refused, evicted: state.evicted))
        }
        for (failure, count) in unlogged.sorted(by: { $0.key.rawValue < $1.key.rawValue }) { logHandshakeFailures(failure, count: count) }
        return tally
    }

    private func count(_ key: KeyPath<State, Int>) -> Int {
        state.withLock { $0[keyPath: key] }
    }

    // MARK: QUICServerDelegate (on the event-loop thread)

    func admit(_ address: QUICAddress) -> QUICAdmission {
        let admitted = count(\.admitted)
        let full = maxConnections.map { admitted >= $0 } ?? false
        return full ? .addressFull : slots.take(LinkSource(address.storage))
    }

    /// The served connection to end for a validated newcomer when the table is full: one that has not proven a grant
    /// (it sent its hello at most), longest idle first, else a proven one idle between messages for at least
    /// `LinkActivity.provenIdleSeconds`. Its slot is freed here; its thread then hears the connection closed.
    func makeRoom(for address: QUICAddress) -> QUICConnection? {
        let now = clock.now()
        let victim: LinkActivity? = state.withLock { state in
            let candidates = state.live.values.compactMap { activity in activity.evictionKey(now).map { (key: $0, activity: activity) } }
                .sorted { $0.key < $1.key }
            // One whose serving ended meanwhile has given its slot back already: the next one goes instead.
            guard let victim = candidates.first(where: { $0.activity.evict() })?.activity else { return nil }
            state.evicted += 1
            return victim
        }
        guard let victim else { return nil }
        slots.release(victim.source)
        return victim.connection
    }

    func refused(_ address: QUICAddress) {
        let (log, count) = state.withLock { state in
            state.refused += 1
            state.refusedSinceLog += 1
            // At most one line a minute, however fast connections are refused.
            let now = clock.now()
            let log = state.lastRefusalLog.map { now - $0 >= 60 } ?? true
            let count = state.refusedSinceLog
            if log { state.lastRefusalLog = now; state.refusedSinceLog = 0 }
            return (log, count)
        }
        if log { context.logger.warn("link-connections-refused", ["reason": "cap-reached", "count": .int(count)]) }
    }

    /// Failed and timed-out handshakes are logged as admission refusals are: the first of each category at once, then
    /// at most one line a minute per category with the count since the last line (and what is left when serving ends),
    /// however fast a half-open flood fails.
    func abandoned(_ address: QUICAddress, because error: QUICError?, heldSlot: Bool) {
        if heldSlot { slots.release(LinkSource(address.storage)) }
        guard let error else { return }
        let failure = LinkFailure(error, handshake: true)
        if failure == .stopped { return }
        let (log, count) = state.withLock { state in
            state.handshakeFailuresSinceLog[failure, default: 0] += 1
            let now = clock.now()
            let log = state.lastHandshakeFailureLog[failure].map { now - $0 >= 60 } ?? true
            let count = state.handshakeFailuresSinceLog[failure] ?? 0
            if log { state.lastHandshakeFailureLog[failure] = now; state.handshakeFailuresSinceLog[failure] = 0 }
            return (log, count)
        }
        if log { logHandshakeFailures(failure, count: count) }
    }

    private func logHandshakeFailures(_ failure: LinkFailure, count: Int) {
        context.logger.warn("link-closed", ["stage": "handshake", "category": .of(failure), "count": .int(count)])
    }

    func accepted(_ connection: QUICConnection) {
        // The connection's deadlines are instants of QUIC's clock.
        let start = QUICConnection.clock.now()
        let activity = LinkActivity(connection: connection, source: LinkSource(connection.remoteAddress.storage), clock: clock)
        state.withLock { state in
            state.admitted += 1
            state.serving += 1
            state.live[ObjectIdentifier(activity)] = activity
        }
        let (context, store, deadlines, slots) = (context, store, deadlines, slots)
        Thread { [self] in
            defer {
                state.withLock { $0.live[ObjectIdentifier(activity)] = nil }
                if activity.release() { slots.release(activity.source) }
                state.withLock { $0.serving -= 1 }
            }
            LinkListener.serve(connection, activity: activity, start: start, context: context, store: store, deadlines: deadlines)
        }.start()
    }

    /// One connection, on its own thread: the hello, then the exchange over the shared store.
    /// A connection evicted for a newcomer ends without a log line (the count is in `link-stopped`).
    static func serve(_ stream: QUICConnection, activity: LinkActivity? = nil, start: MonotonicInstant, context: JobContext.Reopening, store: LinkStore, deadlines: LinkDeadlines) {
        let connection: LinkConnection
        do { connection = try LinkConnection.accept(stream, deadlines: deadlines, start: start, activity: activity) } catch {
            stream.abort()
            if activity?.evicted != true { LinkServer.log(error, stage: "handshake", logger: context.logger) }
            return
        }
        LinkServer(store: store).serve(connection)
    }
}
