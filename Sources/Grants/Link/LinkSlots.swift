import Foundation
import QUIC

/// The connections `serve-link --listen` is answering, in all and per source, kept under `link.max-connections`
/// and `link.max-connections-per-address`. Shared by the accept loop and the serving threads under one lock.
final class LinkSlots: @unchecked Sendable {
    let maxTotal: Int
    let maxPerSource: Int
    private let lock = NSLock()
    private var total = 0
    private var perSource: [LinkSource: Int] = [:]
    private var lastChange = Date()

    init(maxTotal: Int, maxPerSource: Int) {
        self.maxTotal = maxTotal
        self.maxPerSource = maxPerSource
    }

    /// Takes a slot for a connection from `source`, or says which cap is reached (the caller drops it, or first
    /// makes room when the whole table is full).
    func take(_ source: LinkSource) -> QUICAdmission {
        lock.lock(); defer { lock.unlock() }
        guard perSource[source, default: 0] < maxPerSource else { return .addressFull }
        guard total < maxTotal else { return .tableFull }
        total += 1
        perSource[source, default: 0] += 1
        lastChange = Date()
        return .admitted
    }

    /// Gives back the slot of a finished connection from `source`.
    func release(_ source: LinkSource) {
        lock.lock(); defer { lock.unlock() }
        total -= 1
        if let count = perSource[source], count > 1 { perSource[source] = count - 1 } else { perSource[source] = nil }
        lastChange = Date()
    }

    /// Connections being answered now.
    var active: Int {
        lock.lock(); defer { lock.unlock() }
        return total
    }

    /// Since when nothing has been answered (nil while a connection is open).
    var idleSince: Date? {
        lock.lock(); defer { lock.unlock() }
        return total == 0 ? lastChange : nil
    }
}
