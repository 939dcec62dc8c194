import Runner

/// The relay's push debounce: a Device ID is pushed when a trigger was observed outside the 30-second window
/// after its last push, and no token is pushed twice within one window.
///
/// A trigger inside the window is debounced: it counts as observed (`/status` reports it) but never becomes
/// another push, as docs/protocols/relay-api.md ("Gating and observation") says. `RELAY_TRAILING_PUSH=on` (off by default) instead pushes once more when
/// the window ends for the triggers it held back — one more push per Device ID and window, APNs budget and phone
/// battery the default does not spend (docs/roles/relay.md).
///
/// A trigger during a pass: one recorded after `send-wakeups` claimed its Device ID and before it consumed the
/// trigger the claim saw is consumed with it when the pass pushed every live token of the Device ID (trailing push
/// off). Those pushes left after the claim, so each reached APNs after the trigger or, the pass's clock being
/// earlier than the push, less than 30 s before a trigger stored inside the window after that clock; a trigger
/// stored later still counts here. A token the pass did not push (answered before it, lost to another claim,
/// registered since) leaves the trigger pending (`RelayRows.consumeTriggersServed`, docs/roles/relay.md).
///
/// The window holds across kills: `send-wakeups` stamps each token's `sent_at` (committed) before the push
/// leaves, so a pass killed after sending and before recording leaves the trigger pending and the stamp in
/// place; the rerun defers that Device ID (and any retry of that token) until the window has passed, then
/// pushes again. Wake-ups stay at-least-once (a push claimed but never sent is sent later), never twice in
/// one window.
package enum WakeupDebounce {
    package static let windowMilliseconds: Int64 = 30_000

    /// The setting that turns the trailing push on.
    static let trailingPushKey = (name: "RELAY_TRAILING_PUSH",
                                  help: "on: a trigger inside the 30 s window after a push is pushed when the window ends (default off: it is only observed)")

    /// `RELAY_TRAILING_PUSH`: `on` or `off` (unset: off); anything else is a configuration error.
    static func trailingPush(_ env: (String) -> String?) throws -> Bool {
        switch env(trailingPushKey.name) {
        case nil, "off": return false
        case "on": return true
        default: throw JobError.configuration("trailing-push", "RELAY_TRAILING_PUSH must be on or off")
        }
    }

    /// Pure form of the Device ID rule; `trailingPush` is the `RELAY_TRAILING_PUSH=on` variant. The test oracle only:
    /// production runs `dueSQL`, which RelayRuleOracleTests checks against this over a grid of inputs.
    package static func isDue(lastTriggerAt: Int64?, lastPushAt: Int64?, now: Int64, trailingPush: Bool = false) -> Bool {
        guard let trigger = lastTriggerAt else { return false }
        guard let push = lastPushAt else { return true }
        let counts = trailingPush ? trigger > push : trigger >= push + windowMilliseconds
        return counts && now - push >= windowMilliseconds
    }

    /// Pure form of the token rule: a token last stamped at `sentAt` may be pushed at `now`. The test oracle only:
    /// production runs `mayPushSQL`, which RelayRuleOracleTests checks against this over a grid of inputs.
    package static func mayPush(sentAt: Int64?, now: Int64) -> Bool {
        guard let sentAt else { return true }
        return now - sentAt >= windowMilliseconds
    }

    /// The Device ID rule on `relay_devices` aliased `d`, with both `?` bound to `now - window`: due, and none
    /// of its tokens stamped within the window (such a Device ID keeps its trigger and waits).
    static func dueSQL(trailingPush: Bool) -> String {
        let counts = trailingPush ? "d.last_trigger_at > d.last_push_at" : "d.last_trigger_at >= d.last_push_at + \(windowMilliseconds)"
        return """
            (d.last_trigger_at IS NOT NULL AND (d.last_push_at IS NULL OR (\(counts) AND d.last_push_at <= ?)) \
            AND NOT EXISTS (SELECT 1 FROM relay_tokens s WHERE s.device_id = d.id AND s.sent_at > ?))
            """
    }

    /// The token rule on `relay_tokens` (columns qualified with `alias` when given), with `?` bound to `now - window`.
    static func mayPushSQL(_ alias: String = "") -> String {
        let p = alias.isEmpty ? "" : alias + "."
        return "(\(p)sent_at IS NULL OR \(p)sent_at <= ?)"
    }
}
