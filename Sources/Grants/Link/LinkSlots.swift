import Elapsed
import Foundation
import QUIC
import Synchronization

/// The connections `serve-link --listen` is answering, in all and per source, kept under `link.max-connections`
/// and `link.max-connections-per-address`. Shared by the accept loop and the serving threads under one lock.
final class LinkSlots: Sendable {
    let maxTotal: Int
    let maxPerSource: Int
    /// The clock the idle time is measured on.
    let clock: MonotonicClock
    private struct State {
        var total = 0
        var perSource: [LinkSource: Int] = [:]
        var lastChange: MonotonicInstant
    }
    private let state: Mutex<State>

    init(maxTotal: Int, maxPerSource: Int, clock: MonotonicClock = .system) {
        self.maxTotal = maxTotal
        self.maxPerSource = maxPerSource
        self.clock = clock
        state = Mutex(State(lastChange: clock.now()))
    }

    /// Takes a slot for a connection from `source`, or says which cap is reached (the caller drops it, or first
    /// makes room when the whole table is full).
    func take(_ source: LinkSource) -> QUICAdmission {
        state.withLock { state in
            guard state.perSource[source, default: 0] < maxPerSource else { return .addressFull }
            guard state.total < maxTotal else { return .tableFull }
            state.total += 1
            state.perSource[source, default: 0] += 1
            state.lastChange = clock.now()
            return .admitted
        }
    }

    /// Gives back the slot of a finished connection from `source`.
    func release(_ source: LinkSource) {
        state.withLock { state in
            state.total -= 1
            if let count = state.perSource[source], count > 1 { state.perSource[source] = count - 1 } else { state.perSource[source] = nil }
            state.lastChange = clock.now()
        }
    }

    /// Connections being answered now.
    var active: Int { state.withLock { $0.total } }

    /// Since when nothing has been answered (nil while a connection is open).
    var idleSince: MonotonicInstant? { state.withLock { $0.total == 0 ? $0.lastChange : nil } }

    /// Seconds with no connection open (nil while one is).
    var idleSeconds: Double? { idleSince.map { clock.seconds(since: $0) } }
}
