import Foundation
import Runner

/// The one place the homeserver helper sends a wake-up and decides what the relay's answer means: both
/// `retrigger-stale` and `watch-syncthing` send through it, so the relay's error table (docs/roles/homeserver.md)
/// is implemented once.
///
/// `send` posts one trigger and classifies the answer (`RelayAnswer`); `reaction` turns an answer into what the
/// caller does next: done; keep running and re-check after `recheckSeconds` (400–403); stop with exit 78 (404);
/// wait for `Retry-After` (429); retry after an exponential, jittered pause (5xx, other statuses, no answer).
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

    init(relay: RelayClient) { self.relay = relay }

    /// Sends one trigger for `deviceID` (never logged) and returns the classified answer and its status (nil: no answer).
    func send(deviceID: String, now: Date, logger: Logger, attempt: Int) -> (answer: RelayAnswer, status: Int?) {
        let (answer, status) = relay.trigger(deviceID: deviceID, now: now)
        logger.info("relay.answer", ["status": .int(status ?? 0), "try": .int(attempt), "class": .of(AnswerClass(answer))])
        return (answer, status)
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
