import Runner

/// How far one subscription and one Device ID may fan out (docs/roles/relay.md, "Fan-out caps"): at most
/// `devicesPerSubscription` Device IDs provisioned with one original transaction (one more is refused with 403
/// `too-many-devices`), and at most `tokensPerDevice` live APNs tokens per Device ID (a new token beyond it replaces
/// the one registered longest ago).
struct FanOutCaps: Equatable, Sendable {
    var devicesPerSubscription = 10
    var tokensPerDevice = 10

    /// The settings, with their help lines.
    static let devicesKey = (name: "RELAY_MAX_DEVICES_PER_SUBSCRIPTION",
                             help: "Device IDs one subscription (original transaction) may provision, 1–1000 (default 10); one more gets 403 too-many-devices")
    static let tokensKey = (name: "RELAY_MAX_TOKENS_PER_DEVICE",
                            help: "live APNs tokens per Device ID, 1–1000 (default 10); a new one beyond it replaces the oldest")

    /// The caps from the environment (unset: the defaults); a value that is not a whole number 1–1000 is a
    /// configuration error.
    init(_ env: (String) -> String?) throws {
        if let text = env(Self.devicesKey.name) { devicesPerSubscription = try Self.parse(text, Self.devicesKey.name) }
        if let text = env(Self.tokensKey.name) { tokensPerDevice = try Self.parse(text, Self.tokensKey.name) }
    }

    /// The defaults.
    init() {}

    private static func parse(_ text: String, _ name: String) throws -> Int {
        guard let value = Int(text), (1...1000).contains(value) else {
            throw JobError.configuration("fan-out-cap", "\(name) must be a whole number from 1 to 1000")
        }
        return value
    }
}
