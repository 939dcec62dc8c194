/// When the watcher's one pending wake-up goes out, pure over monotonic seconds: trailing-edge debounce after the
/// last change, held back further by the relay's answers (a `Retry-After`, a re-check, a retry pause).
struct TriggerSchedule {
    let debounceSeconds: Double
    /// Since when a wake-up is pending (nil: none).
    private(set) var pendingSince: Double?
    /// The last change plus the debounce.
    private(set) var debounceUntil: Double = 0
    /// No send before this instant (the relay asked for a pause).
    private(set) var notBefore: Double = 0
    /// Transient failures since the last answer that was not one.
    private(set) var failures = 0

    init(debounceSeconds: Double) { self.debounceSeconds = debounceSeconds }

    var isPending: Bool { pendingSince != nil }

    /// A change at `now`: pending, due `debounceSeconds` after it. Returns true when it joined a wake-up already
    /// pending (debounced into it).
    @discardableResult
    mutating func change(at now: Double) -> Bool {
        let joined = pendingSince != nil
        if pendingSince == nil { pendingSince = now }
        debounceUntil = now + debounceSeconds
        return joined
    }

    /// A wake-up due at once (the startup announce).
    mutating func announce(at now: Double) {
        if pendingSince == nil { pendingSince = now }
        debounceUntil = now
    }

    /// When the pending wake-up is due (nil: nothing pending).
    var dueAt: Double? { pendingSince == nil ? nil : max(debounceUntil, notBefore) }

    func isDue(at now: Double) -> Bool { dueAt.map { now >= $0 } ?? false }

    /// The relay accepted the wake-up: nothing pending.
    mutating func delivered() {
        pendingSince = nil
        notBefore = 0
        failures = 0
    }

    /// The relay asked for a pause: the wake-up stays pending until at least `until`.
    mutating func hold(until: Double, transient: Bool) {
        notBefore = until
        failures = transient ? failures + 1 : 0
    }
}
