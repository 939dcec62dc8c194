import Runner

/// What the relay does with one APNs answer: the status/reason table of Apple's provider API as a pure
/// function.
///
/// `invalidToken` answers mark the token dead: `send-wakeups` never pushes it again (unless it is registered
/// again after the verdict, or, for a 410, was registered after APNs's `timestamp`), and `clean-tokens` removes
/// it later with the same rule. `retryNextPass` keeps the token due for the next `send-wakeups` pass;
/// `remintProviderToken` asks for a fresh provider JWT; `configuration` means the relay's own key, topic or
/// endpoint is wrong (the answer condemns the provider credential, not the token), so the token is kept and
/// retried once that is fixed and the pass fails with 78 after recording every answer; `rejected` means APNs
/// refused this one request for a reason retrying will not change (Apple: do not retry these, e.g. `Forbidden`):
/// recorded, never a pass failure.
package enum APNsResponseAction: String, Sendable, LogWord {
    case delivered
    case invalidToken = "invalid-token"
    case retryNextPass = "retry"
    case remintProviderToken = "remint"
    case configuration
    case rejected

    /// The reasons after which a token is dead for this topic (never pushed again; removed by `clean-tokens`).
    package static let invalidTokenReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken", "PayloadTooLarge"]

    /// The 403 reasons that condemn the provider credential itself (key, key id, team, certificate), so every
    /// push of the pass would get them: a configuration failure. Any other 403 (`Forbidden`, or one Apple adds)
    /// is about that one request and never fails the pass.
    package static let credentialReasons: Set<String> = [
        "InvalidProviderToken", "MissingProviderToken", "BadCertificate", "BadCertificateEnvironment",
        "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken",
    ]

    /// The 400 reasons that condemn the relay's topic (APNS_TOPIC) rather than the token.
    package static let topicReasons: Set<String> = ["BadTopic", "TopicDisallowed", "MissingTopic"]

    /// The action for HTTP `status` with APNs `reason` (nil when the body carried none).
    package static func classify(status: Int, reason: String?) -> APNsResponseAction {
        let reason = reason ?? ""
        switch (status, reason) {
        case (200, _):
            return .delivered
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (410, "Unregistered"), (410, "ExpiredToken"), (413, _):
            return .invalidToken
        case (403, "ExpiredProviderToken"):
            return .remintProviderToken
        case (403, _) where credentialReasons.contains(reason):
            return .configuration
        case (400, _) where topicReasons.contains(reason):
            return .configuration
        case (404, _), (405, _):
            return .configuration
        case (400, "IdleTimeout"):
            return .retryNextPass
        case (429, _), (500...599, _):
            return .retryNextPass
        default:
            // 403 Forbidden (or an unknown 403), other 400s (BadExpirationDate, BadPriority, PayloadEmpty, …),
            // 410 without a known reason: this request only.
            return .rejected
        }
    }

    /// A push that produced no HTTP answer (connection, TLS, timeout) is retried next pass.
    package static let transportFailure = APNsResponseAction.retryNextPass
}
