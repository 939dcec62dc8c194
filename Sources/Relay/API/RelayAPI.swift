import Cryptography
import Foundation
import HTTPServer
import Runner

/// The relay's HTTP API under `/api/v1`, exactly as the seed specifies it, over the store.
///
/// Stateless: every request opens its own store connection from the pool and all state (registrations,
/// entitlements, observed times, rate-limit counters) is in the store, so several `serve-relay` processes can
/// answer for one store. Answer codes (bodies carry a fixed `error` word, never an identifier):
///
/// | code | when |
/// |---|---|
/// | 400 | malformed JSON, a missing or mistyped field, a bad Device ID or APNs token, a JWS that is not one |
/// | 401 | the signed transaction does not verify: foreign root, missing OID, bad signature, certificate not valid at `signedDate` |
/// | 402 | the subscription expired (provision, status, and a trigger for an expired Device ID) |
/// | 403 | revoked; evidence for another bundle, product, type or environment; a trigger for a Device ID with no active entitlement or no live token; status without a matching verified row; the legacy numeric id after 2026-10-31 |
/// | 404 | unknown route |
/// | 405 | a known route with another method (`Allow` names the right one) |
/// | 409 | stale (older than the verified transaction already stored) or conflicting (the Device ID holds another active subscription) provisioning, or a legacy numeric id that matches no exact legacy registration — never success |
/// | 413 | body over the cap |
/// | 415 | a body that is not `application/json` |
/// | 429 | rate limited, with `Retry-After` (seconds): provisioning 60/min, triggers 10/min, status 12/min per Device ID |
/// | 503 | the store failed (transient; nothing was recorded) |
struct RelayAPI: Sendable {
    static let version = "1.0.0"
    static let provisionLimit = 60
    static let triggerLimit = 10
    static let statusLimit = 12

    let storeKit: StoreKitConfiguration
    let clock: Clock
    let pool: DatabasePool
    let keyring: StoreKeyring
    /// Called when an accepted trigger makes a push due at the given instant (Unix ms).
    let pushDue: @Sendable (Int64) -> Void
    /// `RELAY_TRAILING_PUSH=on`: a trigger inside the debounce window makes a push due when the window ends
    /// (off: it is only observed, `WakeupDebounce`).
    var trailingPush = false

    enum Route: String { case provision = "/api/v1/provision", trigger = "/api/v1/trigger", status = "/api/v1/status", health = "/api/v1/health" }

    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        var path = request.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard let route = Route(rawValue: path) else { return Self.error(404, "not-found") }
        let allowed: [String] = switch route {
        case .provision: ["POST", "DELETE"]
        case .trigger, .status: ["POST"]
        case .health: ["GET", "HEAD"]
        }
        guard allowed.contains(request.method) else {
            return Self.error(405, "method-not-allowed", headers: [("Allow", allowed.joined(separator: ", "))])
        }
        if route == .health { return .json(200, JSON.object([("status", .string("ok")), ("version", .string(Self.version))]).rendered()) }
        let contentType = request.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard contentType == "application/json" else { return Self.error(415, "unsupported-media-type") }
        guard let fields = try? StrictJSONObject.strings(request.body) else { return Self.error(400, "malformed-json") }
        guard let rawDevice = fields["device_id"] else { return Self.error(400, "missing-device-id") }
        guard let deviceID = RelayIdentifiers.deviceID(rawDevice) else { return Self.error(400, "bad-device-id") }
        let now = clock.now().unixMilliseconds
        do {
            return try pool.with { database in
                let store = FrontDoorStore(database: database, keyring: keyring)
                switch (route, request.method) {
                case (.provision, "POST"): return try provision(fields, deviceID: deviceID, store: store, now: now)
                case (.provision, _): return try deprovision(fields, deviceID: deviceID, store: store, now: now)
                case (.trigger, _): return try trigger(deviceID: deviceID, store: store, now: now)
                default: return try status(fields, deviceID: deviceID, store: store, now: now)
                }
            }
        } catch {
            return Self.error(503, "store-unavailable", headers: [("Retry-After", "5")])
        }
    }

    private func provision(_ fields: [String: String], deviceID: String, store: FrontDoorStore, now: Int64) throws -> HTTPServerResponse {
        guard let rawToken = fields["apns_token"], let evidence = fields["transaction_id"] else { return Self.error(400, "missing-field") }
        guard let token = RelayIdentifiers.apnsToken(rawToken) else { return Self.error(400, "bad-apns-token") }
        var environment = APNsEnvironment.production
        if let name = fields["apns_environment"] {
            guard let parsed = APNsEnvironment(rawValue: name) else { return Self.error(400, "bad-apns-environment") }
            environment = parsed
        }
        if let seconds = try store.rateLimit(route: "provision", deviceID: deviceID, limit: Self.provisionLimit, now: now) { return Self.rateLimited(seconds) }
        if Self.isLegacyID(evidence) {
            guard now < Entitlement.legacyCutoffMilliseconds else { return Self.error(403, "legacy-transaction-retired") }
            switch try store.refreshLegacy(deviceID: deviceID, token: token, transactionID: evidence, now: now) {
            case .refreshed: return Self.provisioned
            case .notRegistered: return Self.error(409, "no-legacy-registration")
            }
        }
        let verified: SignedTransactionVerifier.Verified
        do { verified = try SignedTransactionVerifier.verify(evidence, configuration: storeKit) } catch { return Self.refusal(error) }
        if let lapse = verified.lapse(now: now) {
            try store.recordLapse(deviceID: deviceID, verified: verified, revokedAt: verified.revokedAt)
            return Self.refusal(lapse)
        }
        switch try store.provision(deviceID: deviceID, token: token, environment: environment, verified: verified, now: now) {
        case .provisioned: return Self.provisioned
        case .stale: return Self.error(409, "stale-transaction")
        case .conflicting: return Self.error(409, "conflicting-subscription")
        }
    }

    private func deprovision(_ fields: [String: String], deviceID: String, store: FrontDoorStore, now: Int64) throws -> HTTPServerResponse {
        guard let rawToken = fields["apns_token"] else { return Self.error(400, "missing-field") }
        guard let token = RelayIdentifiers.apnsToken(rawToken) else { return Self.error(400, "bad-apns-token") }
        if let seconds = try store.rateLimit(route: "provision", deviceID: deviceID, limit: Self.provisionLimit, now: now) { return Self.rateLimited(seconds) }
        _ = try store.registry.unregister(deviceID: deviceID, token: token)
        return .json(200, "{\"status\":\"deprovisioned\"}")
    }

    private func trigger(deviceID: String, store: FrontDoorStore, now: Int64) throws -> HTTPServerResponse {
        switch try store.trigger(deviceID: deviceID, limit: Self.triggerLimit, now: now) {
        case .rateLimited(let seconds): return Self.rateLimited(seconds)
        case .accepted(let tokens, let due):
            if due <= now || trailingPush { pushDue(due) }
            return .json(202, JSON.object([("status", .string("accepted")), ("devices_notified", .int(Int64(tokens)))]).rendered())
        case .notProvisioned: return Self.error(403, "no-active-subscription")
        case .expired: return Self.error(402, "subscription-expired")
        case .revoked: return Self.error(403, "subscription-revoked")
        }
    }

    private func status(_ fields: [String: String], deviceID: String, store: FrontDoorStore, now: Int64) throws -> HTTPServerResponse {
        guard let evidence = fields["signed_transaction"] else { return Self.error(400, "missing-field") }
        if let seconds = try store.rateLimit(route: "status", deviceID: deviceID, limit: Self.statusLimit, now: now) { return Self.rateLimited(seconds) }
        if Self.isLegacyID(evidence) { return Self.error(403, "no-verified-subscription") }
        let verified: SignedTransactionVerifier.Verified
        do { verified = try SignedTransactionVerifier.verify(evidence, configuration: storeKit) } catch { return Self.refusal(error) }
        if let lapse = verified.lapse(now: now) {
            // Verified evidence closes the gate whichever route it reaches (newer than the stored record only).
            try store.recordLapse(deviceID: deviceID, verified: verified, revokedAt: verified.revokedAt)
            return Self.refusal(lapse)
        }
        switch try store.status(deviceID: deviceID, verified: verified, now: now) {
        case .noMatchingSubscription: return Self.error(403, "no-verified-subscription")
        case .observed(let at):
            var members: [(String, JSON)] = [("v1_trigger_observed", .bool(at != nil))]
            if let at { members.append(("last_trigger_observed_at", .string(Self.seconds(at)))) }
            members.append(("checked_at", .string(Self.seconds(now))))
            return .json(200, JSON.object(members).rendered())
        }
    }

    // MARK: Answers

    static let provisioned = HTTPServerResponse.json(200, "{\"status\":\"provisioned\"}")

    static func error(_ status: Int, _ word: String, headers: [(name: String, value: String)] = []) -> HTTPServerResponse {
        .json(status, "{\"error\":\"\(word)\"}", headers: headers)
    }

    static func rateLimited(_ seconds: Int) -> HTTPServerResponse { error(429, "rate-limited", headers: [("Retry-After", String(seconds))]) }

    static func refusal(_ refusal: SignedTransactionVerifier.Refusal) -> HTTPServerResponse {
        switch refusal {
        case .malformed: return error(400, "malformed-transaction")
        case .unverified: return error(401, "unverified-transaction")
        case .expired: return error(402, "subscription-expired")
        case .revoked: return error(403, "subscription-revoked")
        case .foreign: return error(403, "transaction-not-for-this-relay")
        }
    }

    /// Older apps send the numeric original transaction id instead of a JWS.
    static func isLegacyID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 20 && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// RFC 3339 to the second, UTC (`2026-07-12T10:00:00Z`), as the seed shows.
    static func seconds(_ milliseconds: Int64) -> String {
        Date(unixMilliseconds: milliseconds).rfc3339Seconds
    }
}
