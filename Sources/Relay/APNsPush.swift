import Foundation
import HTTPClient

/// One silent background push as APNs's provider API wants it, and what its answer means.
enum APNsPush {
    /// `{"aps":{"content-available":1}}`: no alert, no sound, no badge — a wake-up only.
    static let body = Array(#"{"aps":{"content-available":1}}"#.utf8)
    /// Apple may store and retry delivery for an hour (`apns-expiration`, docs/protocols/relay-api.md).
    static let expirationSeconds: Int64 = 3600

    /// `POST /3/device/<token>` with the background-push headers.
    static func request(baseURL: String, token: String, jwt: String, topic: String, nowMilliseconds: Int64) -> HTTPRequest {
        HTTPRequest(method: "POST", url: baseURL + "/3/device/" + token, headers: [
            ("authorization", "bearer " + jwt),
            ("apns-push-type", "background"),
            ("apns-priority", "5"),
            ("apns-topic", topic),
            ("apns-expiration", String(nowMilliseconds / 1000 + expirationSeconds)),
            ("content-type", "application/json"),
        ], body: body)
    }

    /// The recorded result of one push.
    struct Result: Equatable {
        var status: Int?
        var reason: String?
        /// For 410: APNs's `timestamp` (ms) when it learned the token was invalid.
        var invalidatedAt: Int64?
        var action: APNsResponseAction
    }

    /// Reads an APNs answer: `{"reason":"…","timestamp":ms}` on failures, nothing useful on 200.
    static func result(_ outcome: Swift.Result<HTTPResponse, HTTPError>) -> Result {
        guard case .success(let response) = outcome else {
            return Result(status: nil, reason: nil, invalidatedAt: nil, action: APNsResponseAction.transportFailure)
        }
        var reason: String?
        var timestamp: Int64?
        if response.status != 200, !response.body.isEmpty,
           let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] {
            if let text = object["reason"] as? String, text.count <= 64, text.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic }) {
                reason = text
            }
            if let number = object["timestamp"] as? NSNumber { timestamp = number.int64Value }
        }
        // 413 has one reason; recorded even when the body did not say it, so the token is marked dead.
        if response.status == 413 && reason == nil { reason = "PayloadTooLarge" }
        let action = APNsResponseAction.classify(status: response.status, reason: reason)
        return Result(status: response.status, reason: reason, invalidatedAt: response.status == 410 ? timestamp : nil, action: action)
    }
}
