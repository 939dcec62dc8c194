import Elapsed
import Foundation
import QUIC

/// What `serve-link` knows of one connection it is serving, for making room when the slot table is full: when its
/// last whole message came or went, whether it has proven a grant, and whether its slot was already given back.
///
/// Written by the connection's serving thread (`LinkConnection` on each frame, `LinkServer` on an accepted proof) and
/// read by the endpoint's loop thread when a newcomer needs a slot; every field is under `lock`.
final class LinkActivity: @unchecked Sendable {
    // @unchecked: the mutable fields are read and written only while `lock` is held.
    let connection: QUICConnection
    let source: LinkSource
    /// The clock idle time is measured on.
    private let clock: MonotonicClock
    private let lock = NSLock()
    private var lastMessage: MonotonicInstant
    private var proven = false
    private var slotGiven = false
    private var wasEvicted = false

    /// A proven connection is ended for a newcomer only once it has been this many seconds without a whole
    /// message: one in the middle of an exchange is left to finish.
    static let provenIdleSeconds: TimeInterval = 1

    init(connection: QUICConnection, source: LinkSource, clock: MonotonicClock) {
        self.connection = connection
        self.source = source
        self.clock = clock
        lastMessage = clock.now()
    }

    /// A whole message arrived or left.
    func touch() {
        let now = clock.now()
        lock.lock(); lastMessage = now; lock.unlock()
    }

    /// The peer proved a grant this node issued.
    func markProven() {
        lock.lock(); proven = true; lock.unlock()
    }

    /// How evictable the connection is at `now`: nil when it must be left alone (proven and busy, or its slot already
    /// given back); otherwise unproven connections before proven ones, each longest idle first (a smaller key goes
    /// first).
    func evictionKey(_ now: MonotonicInstant) -> (Int, MonotonicInstant)? {
        lock.lock(); defer { lock.unlock() }
        if slotGiven { return nil }
        if proven && now - lastMessage < LinkActivity.provenIdleSeconds { return nil }
        return (proven ? 1 : 0, lastMessage)
    }

    /// Gives the connection's slot back when its serving ends; false when it was already given to a newcomer.
    func release() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if slotGiven { return false }
        slotGiven = true
        return true
    }

    /// Takes the connection's slot for a newcomer, if it still holds it (the caller frees it and ends the connection).
    func evict() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if slotGiven { return false }
        slotGiven = true
        wasEvicted = true
        return true
    }

    /// Whether it was ended to make room for a newcomer (its end is then not logged as a failure).
    var evicted: Bool {
        lock.lock(); defer { lock.unlock() }
        return wasEvicted
    }
}
