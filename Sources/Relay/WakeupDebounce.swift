/// The relay's push debounce: a Device ID is pushed when a trigger was observed since its last push, and
/// no token is pushed twice within one 30-second window.
///
/// The window holds across kills: `send-wakeups` stamps each token's `sent_at` (committed) before the push
/// leaves, so a pass killed after sending and before recording leaves the trigger pending and the stamp in
/// place; the rerun defers that Device ID (and any retry of that token) until the window has passed, then
/// pushes again. Wake-ups stay at-least-once (a push claimed but never sent is sent later), never twice in
/// one window.
public enum WakeupDebounce {
    public static let windowMilliseconds: Int64 = 30_000

    /// Pure form of the Device ID rule.
    public static func isDue(lastTriggerAt: Int64?, lastPushAt: Int64?, now: Int64) -> Bool {
        guard let trigger = lastTriggerAt else { return false }
        guard let push = lastPushAt else { return true }
        return trigger > push && now - push >= windowMilliseconds
    }

    /// Pure form of the token rule: a token last stamped at `sentAt` may be pushed at `now`.
    public static func mayPush(sentAt: Int64?, now: Int64) -> Bool {
        guard let sentAt else { return true }
        return now - sentAt >= windowMilliseconds
    }

    /// The Device ID rule on `relay_devices` aliased `d`, with both `?` bound to `now - window`: due, and none
    /// of its tokens stamped within the window (such a Device ID keeps its trigger and waits).
    static let dueSQL = """
        (d.last_trigger_at IS NOT NULL AND (d.last_push_at IS NULL OR (d.last_trigger_at > d.last_push_at AND d.last_push_at <= ?)) \
        AND NOT EXISTS (SELECT 1 FROM relay_tokens s WHERE s.device_id = d.id AND s.sent_at > ?))
        """

    /// The token rule on `relay_tokens` (columns qualified with `alias` when given), with `?` bound to `now - window`.
    static func mayPushSQL(_ alias: String = "") -> String {
        let p = alias.isEmpty ? "" : alias + "."
        return "(\(p)sent_at IS NULL OR \(p)sent_at <= ?)"
    }
}
