import Runner

/// Why the helper sent a v1 trigger instead of an authenticated one (docs/protocols/trigger-v2.md, "The helper").
enum TriggerFallback: String, LogWord, Sendable {
    /// The relay answered the v2 route with 404 or 405 within the last cadence.
    case relayWithoutV2 = "relay-without-v2"
    case noConfigFolder = "no-config-folder"
    case keyUnreadable = "key-unreadable"
    case keyMalformed = "key-malformed"
    case keyOfOtherDevice = "key-of-other-device"
}
