/// The relay's push debounce: a Device ID is pushed when a trigger was observed since its last push, and
/// at most once per 30-second window.
public enum WakeupDebounce {
    public static let windowMilliseconds: Int64 = 30_000

    /// Pure form of the rule.
    public static func isDue(lastTriggerAt: Int64?, lastPushAt: Int64?, now: Int64) -> Bool {
        guard let trigger = lastTriggerAt else { return false }
        guard let push = lastPushAt else { return true }
        return trigger > push && now - push >= windowMilliseconds
    }

    /// The same rule on `relay_devices` aliased `d`, with `?` bound to `now - window`.
    static let dueSQL = "(d.last_trigger_at IS NOT NULL AND (d.last_push_at IS NULL OR (d.last_trigger_at > d.last_push_at AND d.last_push_at <= ?)))"
}
