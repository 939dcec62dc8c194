import Cryptography
import Foundation
import Runner
import Store

/// The one place the homeserver helper sends a wake-up and decides what the relay's answer means: both
/// `retrigger-stale` and `watch-syncthing` send through it, so the relay's error table (docs/roles/homeserver.md)
/// is implemented once.
///
/// `send` posts one trigger and classifies the answer (`RelayAnswer`); `reaction` turns an answer into what the
/// caller does next: done; keep running and re-check after `recheckSeconds` (400–403); stop with exit 78 (404);
/// wait for `Retry-After` (429); retry after an exponential, jittered pause (5xx, other statuses, no answer).
///
/// The trigger is authenticated (v2) when this Syncthing's key can be read, by the rules of
/// docs/protocols/trigger-v2.md ("The helper"):
///
/// - key readable → v2; a 202 pins this helper to v2 (`v2_accepted_at` in its store), and from then on it never
///   sends v1 — an unusable key is then a configuration error (exit 78), and a 404/405 on the v2 route is `.notFound`;
/// - a relay that answers the v2 route with 404 or 405 (it predates v2) gets v1 in the same send, and v2 is tried
///   again only after one cadence;
/// - key unusable (and not pinned) → v1; `job doctor` warns with the fix.
struct TriggerSender {
    /// What the caller does after an answer.
    enum Reaction {
        /// 202: the wake-up was accepted.
        case delivered
        /// 400–403: no active subscription; keep running and ask again no sooner than this instant (Unix ms).
        case recheck(atMilliseconds: Int64)
        /// 429: wait until this instant (Unix ms), then send again.
        case wait(untilMilliseconds: Int64)
        /// 5xx, another status or no answer: send again after `retryPause(attempt:)`.
        case retry
        /// 404: RELAY_URL is wrong or the relay is broken; the helper stops with this error (exit 78).
        case fatal(JobError)

        /// True for `.retry`.
        var isRetry: Bool { if case .retry = self { return true } else { return false } }
        /// True for `.delivered`.
        var isDelivered: Bool { if case .delivered = self { return true } else { return false } }
    }

    /// How long a watcher waits before asking again after a 400–403 answer.
    static let recheckSeconds: Int64 = 60
    /// The error a 404 answer to a trigger ends the helper with.
    static let notFoundError = JobError.configuration("relay-not-found", "the relay answered 404 to the trigger: RELAY_URL is wrong or the relay is broken")

    let relay: RelayClient
    /// The config.xml whose folder holds cert.pem and key.pem (nil: none found, so v1).
    let configPath: String?
    /// The helper's cadence: how long a relay's 404/405 on the v2 route keeps triggers on v1.
    let cadenceSeconds: Int
    /// The helper's store, which keeps its v2 pin.
    let database: Database

    init(relay: RelayClient, configPath: String?, cadenceSeconds: Int, database: Database) {
        self.relay = relay
        self.configPath = configPath
        self.cadenceSeconds = cadenceSeconds
        self.database = database
    }

    /// What one send did.
    struct Sent {
        let answer: RelayAnswer
        let status: Int?
        /// Whether the trigger sent was a v2 one.
        let authenticated: Bool
        /// When v1 was sent: why.
        let fallback: TriggerFallback?
    }

    /// Sends one trigger for `deviceID` (this Syncthing's own, never logged) and returns the classified answer and its
    /// status (nil: no answer). Throws only when this helper is pinned to v2 and its key is unusable (exit 78).
    func send(deviceID: String, now: Date, logger: Logger, attempt: Int) throws -> Sent {
        let key = DeviceKeyFiles.load(configPath: configPath, myID: deviceID)
        if case .failure(let unusable) = key { logger.warn("relay.device_key_unusable", ["reason": .of(unusable.fallback)]) }
        let sent = try send(deviceID: deviceID, key: key, now: now)
        logger.info("relay.answer", ["status": .int(sent.status ?? 0), "try": .int(attempt), "class": .of(AnswerClass(sent.answer)),
                                     "authenticated": .bool(sent.authenticated)])
        if let fallback = sent.fallback { logger.info("relay.sent_v1", ["reason": .of(fallback)]) }
        return sent
    }

    /// The send with `key` given: v2 or v1 by the rules above, the pin state read and stored in `database`.
    func send(deviceID: String, key: Result<DeviceSigningKey, DeviceKeyFiles.Unusable>, now: Date) throws -> Sent {
        var state = try PinState.load(database)
        let nowMilliseconds = now.unixMilliseconds
        let fallback: TriggerFallback
        switch key {
        case .success(let key):
            let probedRecently = state.acceptedAt == nil && state.unsupportedAt.map { nowMilliseconds - $0 < Int64(cadenceSeconds) * 1000 } == true
            guard probedRecently else {
                guard let (status, retryAfter) = relay.triggerV2(key: key, now: now) else { return Sent(answer: .transient, status: nil, authenticated: true, fallback: nil) }
                if status == 404 || status == 405 {
                    if state.acceptedAt != nil { return Sent(answer: .notFound, status: status, authenticated: true, fallback: nil) }
                    state.unsupportedAt = nowMilliseconds
                    try state.save(database)
                    fallback = .relayWithoutV2
                    break
                }
                // A replayed nonce cannot happen twice with fresh nonces: retried like a transient fault.
                let answer = status == 409 ? .transient : RelayAnswer.classify(status: status, retryAfter: retryAfter, now: now)
                if answer == .sent && (state.acceptedAt == nil || state.unsupportedAt != nil) {
                    state.acceptedAt = state.acceptedAt ?? nowMilliseconds
                    state.unsupportedAt = nil
                    try state.save(database)
                }
                return Sent(answer: answer, status: status, authenticated: true, fallback: nil)
            }
            fallback = .relayWithoutV2
        case .failure(let unusable):
            if state.acceptedAt != nil {
                throw JobError.configuration("device-key-unusable",
                                             "the relay accepted this helper's authenticated trigger before, so it never sends v1 again, but " + unusable.explanation)
            }
            fallback = unusable.fallback
        }
        let (answer, status) = relay.trigger(deviceID: deviceID, now: now)
        return Sent(answer: answer, status: status, authenticated: false, fallback: fallback)
    }

    /// The helper's v2 pin and the relay's last 404/405 on the v2 route, in `relay_helper_state`.
    struct PinState: Equatable {
        var acceptedAt: Int64?
        var unsupportedAt: Int64?

        static func load(_ db: Database) throws -> PinState {
            guard let row = try db.queryOne("SELECT v2_accepted_at, v2_unsupported_at FROM relay_helper_state WHERE id = 1") else { return PinState() }
            return PinState(acceptedAt: try row.get(0), unsupportedAt: try row.get(1))
        }

        func save(_ db: Database) throws {
            try db.writeIfNeeded { db in
                try db.execute("""
                    INSERT INTO relay_helper_state (id, v2_accepted_at, v2_unsupported_at) VALUES (1, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET v2_accepted_at = excluded.v2_accepted_at, v2_unsupported_at = excluded.v2_unsupported_at
                    """, [acceptedAt, unsupportedAt])
            }
        }
    }

    /// The pure reaction to `answer` received at `now` (Unix ms).
    static func reaction(to answer: RelayAnswer, now: Int64) -> Reaction {
        switch answer {
        case .sent: return .delivered
        case .subscriptionInactive: return .recheck(atMilliseconds: now + recheckSeconds * 1000)
        case .notFound: return .fatal(notFoundError)
        case .rateLimited(let until): return .wait(untilMilliseconds: max(until, now))
        case .transient: return .retry
        }
    }

    /// The pause (seconds) before try `attempt + 1` after `attempt` transient failures: `base · 2^(attempt−1)`,
    /// at most `cap`, times a jitter factor drawn from 0.5…1.5 (`jitter` gives it, for tests).
    static func retryPause(attempt: Int, base: Double, cap: Double, jitter: Double = Double.random(in: 0.5...1.5)) -> Double {
        let exponential = base * pow(2, Double(max(attempt - 1, 0)))
        return min(exponential, cap) * jitter
    }

    /// The class of an answer, as metrics and logs name it.
    enum AnswerClass: String, LogWord, CaseIterable {
        case sent, subscriptionInactive = "subscription_inactive", notFound = "not_found", rateLimited = "rate_limited", transient

        init(_ answer: RelayAnswer) {
            switch answer {
            case .sent: self = .sent
            case .subscriptionInactive: self = .subscriptionInactive
            case .notFound: self = .notFound
            case .rateLimited: self = .rateLimited
            case .transient: self = .transient
            }
        }
    }
}
