import Runner

/// What the relay does with one APNs answer: the status/reason table of Apple's provider API as a pure
/// function.
///
/// `invalidToken` answers are recorded and acted on later by `clean-tokens` (which also applies the 410
/// timestamp rule); `retryNextPass` keeps the token due for the next `send-wakeups` pass;
/// `remintProviderToken` asks for a fresh provider JWT; `configuration` means the relay's own key, topic or
/// endpoint is wrong, so the token is kept and retried once that is fixed; `rejected` means APNs refused this
/// request for a reason retrying will not change (Apple: do not retry these).
public enum APNsResponseAction: String, Sendable, LogWord {
    case delivered
    case invalidToken = "invalid-token"
    case retryNextPass = "retry"
    case remintProviderToken = "remint"
    case configuration
    case rejected

    /// The reasons after which a token is dead for this topic (removal candidates for `clean-tokens`).
    public static let invalidTokenReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered", "ExpiredToken"]

    /// The action for HTTP `status` with APNs `reason` (nil when the body carried none).
    public static func classify(status: Int, reason: String?) -> APNsResponseAction {
        switch (status, reason ?? "") {
        case (200, _):
            return .delivered
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"), (410, "Unregistered"), (410, "ExpiredToken"):
            return .invalidToken
        case (403, "ExpiredProviderToken"):
            return .remintProviderToken
        case (403, _):
            // BadCertificate, BadCertificateEnvironment, Forbidden, InvalidProviderToken, MissingProviderToken,
            // UnrelatedKeyIdInToken, BadEnvironmentKeyIdInToken: the relay's credentials are wrong.
            return .configuration
        case (400, "BadTopic"), (400, "TopicDisallowed"), (400, "MissingTopic"), (404, _), (405, _):
            return .configuration
        case (400, "IdleTimeout"):
            return .retryNextPass
        case (429, _), (500...599, _):
            return .retryNextPass
        default:
            // Other 400s (BadExpirationDate, BadPriority, PayloadEmpty, …), 410 without a known reason, 413.
            return .rejected
        }
    }

    /// A push that produced no HTTP answer (connection, TLS, timeout) is retried next pass.
    public static let transportFailure = APNsResponseAction.retryNextPass
}
