import Cryptography
import Foundation
import HTTPClient
import Runner

/// What the relay's answer to `POST /api/v1/trigger` means, exactly as docs/protocols/relay-api.md ("How a client reads a trigger answer") says.
package enum RelayAnswer: Equatable, Sendable {
    /// 202: accepted.
    case sent
    /// 400/401/402/403: no active subscription for this Device ID (recoverable; re-checked on the slow cadence).
    case subscriptionInactive
    /// 404: wrong RELAY_URL or a broken relay deployment (fatal configuration error).
    case notFound
    /// 429: wait until this instant (Unix ms) — from `Retry-After`, seconds or HTTP-date; 30 s when absent.
    case rateLimited(untilMilliseconds: Int64)
    /// 5xx, any other status, or no answer at all: retried with back-off.
    case transient

    /// Used when a 429 carries no usable `Retry-After` (vaultsync-notify's default).
    package static let defaultRetryAfterSeconds: Double = 30

    /// Pure classification of one answer.
    package static func classify(status: Int, retryAfter: String?, now: Date) -> RelayAnswer {
        switch status {
        case 202: return .sent
        case 400, 401, 402, 403: return .subscriptionInactive
        case 404: return .notFound
        case 429:
            let seconds = retryAfter.flatMap { RetryAfter.parse($0, now: now) } ?? defaultRetryAfterSeconds
            return .rateLimited(untilMilliseconds: now.addingTimeInterval(seconds).unixMilliseconds)
        default: return .transient
        }
    }
}

/// The relay's two public calls the helper uses: `GET /api/v1/health` and `POST /api/v1/trigger`.
struct RelayClient {
    let baseURL: String
    let http: HTTPClient

    /// `caFile` (`RELAY_CA_FILE`) adds a CA bundle for a relay with a private certificate; verification stays full.
    /// `connectTimeout` and `totalTimeout` bound one call (seconds).
    init(baseURL: String, caFile: String? = nil, connectTimeout: Double = 10, totalTimeout: Double = 20) {
        self.baseURL = baseURL
        http = HTTPClient(options: HTTPClient.Options(connectTimeout: connectTimeout, totalTimeout: totalTimeout, maxResponseBodyBytes: 64 << 10, httpVersion: .http2OrHTTP1_1,
                                                      tls: TLSOptions(caFile: caFile)))
    }

    /// Sends one trigger for `deviceID` and classifies the answer (a transport failure is `.transient`).
    func trigger(deviceID: String, now: Date) -> (answer: RelayAnswer, status: Int?) {
        let body = Array("{\"device_id\":\(JSON.quote(deviceID))}".utf8)
        let request = HTTPRequest(method: "POST", url: baseURL + "/api/v1/trigger", headers: [("Content-Type", "application/json")], body: body)
        guard let response = try? http.send(request) else { return (.transient, nil) }
        return (RelayAnswer.classify(status: response.status, retryAfter: response.header("Retry-After"), now: now), response.status)
    }

    /// Sends one authenticated (v2) trigger signed by `key` at `now` with a fresh nonce (docs/protocols/trigger-v2.md);
    /// the HTTP status and `Retry-After`, or nil when no answer came (or the nonce could not be drawn).
    func triggerV2(key: DeviceSigningKey, now: Date) -> (status: Int, retryAfter: String?)? {
        guard let nonce = try? SecureRandom.bytes(count: TriggerV2.nonceCount),
              let body = try? TriggerV2.body(key: key, nowSeconds: Int64(now.timeIntervalSince1970.rounded(.down)), nonce: nonce) else { return nil }
        let request = HTTPRequest(method: "POST", url: baseURL + TriggerV2.path, headers: [("Content-Type", "application/json")], body: body)
        guard let response = try? http.send(request) else { return nil }
        return (response.status, response.header("Retry-After"))
    }

    /// True when `/api/v1/health` answers 200 with `{"status":"ok"}` (only `status` is checked).
    func isHealthy() -> Bool { health().healthy }

    /// The health answer: whether it is `{"status":"ok"}`, and its status (nil: no answer).
    func health() -> (healthy: Bool, status: Int?) {
        guard let response = try? http.send(HTTPRequest(method: "GET", url: baseURL + "/api/v1/health")) else { return (false, nil) }
        return (Self.isHealthyAnswer(status: response.status, body: response.body), response.status)
    }

    /// The health answer's decoder, pure (fuzzed through `RelayFuzzing`).
    static func isHealthyAnswer(status: Int, body: [UInt8]) -> Bool {
        guard status == 200, let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return false }
        return object["status"] as? String == "ok"
    }
}
