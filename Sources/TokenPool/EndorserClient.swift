import Foundation
import HTTPClient

/// Sends the prefetch request to Endorser and classifies the answer.
///
/// HTTP statuses are outcomes, not errors: 200 with `{"data":[…],"hitLimit":bool}` is a fetch; 400 whose
/// `error.code` is `JWT_VERIFY_FAILED` (and 401/403) means Endorser refused the credential; 429 and 5xx are
/// transient (a `Retry-After` on 429/503 sets a back-off); any other status is a refusal; a 200 that is not the documented shape is a bad response.
package struct EndorserClient: Sendable {
    /// What one call came to.
    package enum Outcome: Sendable, Equatable {
        case fetched(status: Int, rows: Int, hitLimit: Bool)
        case credentialRejected(status: Int)
        case refused(status: Int)
        case transient(status: Int?)
        /// 429 or 503 with a `Retry-After`: transient, and no request before `seconds` have passed.
        case backOff(status: Int, seconds: Int64)
        case badResponse(status: Int?)
        case invalidURL

        /// The HTTP status answered, if any.
        package var httpStatus: Int? {
            switch self {
            case .fetched(let status, _, _), .credentialRejected(let status), .refused(let status), .backOff(let status, _): return status
            case .transient(let status), .badResponse(let status): return status
            case .invalidURL: return nil
            }
        }
    }

    let client: HTTPClient

    package init(client: HTTPClient = HTTPClient(options: .init(connectTimeout: 10, totalTimeout: 30, maxResponseBodyBytes: 1 << 20,
                                                                userAgent: "background-jobs-prefetch"))) {
        self.client = client
    }

    /// POSTs `request` to `baseURL` with `Authorization: Bearer <token>`; `now` reads an HTTP-date `Retry-After`.
    /// A fetch also returns the answer's rows.
    package func prefetch(baseURL: String, token: String, request: PrefetchRequest, now: Date) -> (outcome: Outcome, rows: [ActivityRow]) {
        let http = HTTPRequest(method: "POST", url: PrefetchRequest.url(base: baseURL),
                               headers: [("Content-Type", "application/json"), ("Accept", "application/json"), ("Authorization", "Bearer " + token)],
                               body: request.bodyJSON)
        let response: HTTPResponse
        do {
            response = try client.send(http)
        } catch {
            switch error {
            case .invalidRequest(.malformedURL), .invalidRequest(.unsupportedScheme): return (.invalidURL, [])
            case .bodyTooLarge: return (.badResponse(status: nil), [])
            default: return (.transient(status: nil), [])
            }
        }
        if [429, 503].contains(response.status), let value = response.header("Retry-After"),
           let seconds = RetryAfter.parse(value, now: now) {
            return (.backOff(status: response.status, seconds: Int64(seconds.rounded(.up))), [])
        }
        let outcome = Self.classify(status: response.status, body: response.body)
        guard case .fetched = outcome else { return (outcome, []) }
        return (outcome, ActivityRow.rows(ofAnswer: response.body))
    }

    /// The outcome of an answer with `status` and `body`.
    package static func classify(status: Int, body: [UInt8]) -> Outcome {
        switch status {
        case 200:
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                  let data = object["data"] as? [Any], let hitLimit = object["hitLimit"] as? NSNumber,
                  isJSONBoolean(hitLimit) else { return .badResponse(status: status) }
            return .fetched(status: status, rows: data.count, hitLimit: hitLimit.boolValue)
        case 400:
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            let code = (object?["error"] as? [String: Any])?["code"] as? String
            return code == "JWT_VERIFY_FAILED" ? .credentialRejected(status: status) : .refused(status: status)
        case 401, 403:
            return .credentialRejected(status: status)
        case 429, 500...599:
            return .transient(status: status)
        default:
            return .refused(status: status)
        }
    }

    /// Whether a number from `JSONSerialization` was the JSON literal `true` or `false` (Foundation marks those
    /// with the `char` type code; numbers such as `1` come back as integers).
    static func isJSONBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c" && (number.int64Value == 0 || number.int64Value == 1)
    }
}
