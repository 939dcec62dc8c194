import Cryptography
import Foundation
import HTTPServer
import Runner
import Store

/// The relay's HTTP API under `/api/v1`, exactly as docs/protocols/relay-api.md specifies it, and the authenticated
/// trigger `POST /api/v2/trigger` (docs/protocols/trigger-v2.md, which lists its own answers), over the store.
///
/// Stateless: all state (registrations, entitlements, observed times, rate-limit counters) is in the store, so
/// several `serve-relay` processes can answer for one store. Every write goes through the process's one
/// `GroupCommitWriter` (many requests share one durable commit; a request is answered only after the commit that
/// holds its write, see docs/group-commit.md) and reads use connections of their own from the pool; on PostgreSQL
/// with `--max-batch 1` each write checks a connection out of the pool instead. Answer codes (bodies carry a fixed `error` word, never an
/// identifier):
///
/// | code | when |
/// |---|---|
/// | 400 | malformed JSON, a missing or mistyped field, a bad Device ID or APNs token, a JWS that is not one |
/// | 401 | the signed transaction does not verify: foreign root, missing OID, bad signature, certificate not valid at `signedDate`; a v1 trigger for a Device ID pinned to v2 (`authenticated-trigger-required`) |
/// | 402 | the subscription expired (provision, status, and a trigger for an expired Device ID) |
/// | 403 | revoked; provisioning one more Device ID than the subscription's cap (`too-many-devices`, `FanOutCaps`); evidence for another bundle, product, type or environment; a trigger for a Device ID with no active entitlement or no live token; status without a matching verified row; the legacy numeric id after 2026-10-31 |
/// | 404 | unknown route |
/// | 405 | a known route with another method (`Allow` names the right one) |
/// | 409 | stale (older than the verified transaction already stored) or conflicting (the Device ID holds another active subscription) provisioning, or a legacy numeric id that matches no exact legacy registration — never success |
/// | 413 | body over the cap |
/// | 415 | a body that is not `application/json` |
/// | 429 | rate limited, with `Retry-After` (seconds): provisioning 60/min, triggers 10/min, status 12/min per Device ID; signature checks 120/min per client address (`SignatureBudget`) |
/// | 503 | the store failed (transient; nothing was recorded) |
struct RelayAPI: Sendable {
    /// What `/health` reports: the project's version (`job --version`).
    static let version = BuildInfo.version
    static let provisionLimit = 60
    static let triggerLimit = 10
    static let statusLimit = 12

    let storeKit: StoreKitConfiguration
    let clock: Clock
    let pool: DatabasePool
    /// The store's writer; nil on PostgreSQL with `--max-batch 1`, where writes run on pool connections.
    let writer: GroupCommitWriter?
    let keyring: StoreKeyring
    /// Called when an accepted trigger makes a push due at the given instant (Unix ms).
    let pushDue: @Sendable (Int64) -> Void
    /// `RELAY_TRAILING_PUSH=on`: a trigger inside the debounce window makes a push due when the window ends
    /// (off: it is only observed, `WakeupDebounce`).
    var trailingPush = false
    /// Device IDs per subscription and live tokens per Device ID (`FanOutCaps`).
    var caps = FanOutCaps()
    /// Signature checks per client address (nil: unbounded).
    var signatures: SignatureBudget?

    enum Route: String {
        case provision = "/api/v1/provision", trigger = "/api/v1/trigger", status = "/api/v1/status", health = "/api/v1/health"
        case authenticatedTrigger = "/api/v2/trigger"
    }

    /// Answers `request` through `respond` (exactly once): a trigger from the writer's thread once its batch is
    /// durable, every other request before this returns.
    func handle(_ request: HTTPServerRequest, respond: @escaping HTTPServer.Responder) {
        switch prepare(request) {
        case .answer(let response): respond(response)
        case .trigger(let deviceID, let now):
            let limit = Self.triggerLimit
            write({ store in try store.trigger(deviceID: deviceID, limit: limit, now: now) }) { [pushDue, trailingPush] result in
                respond(Self.triggerAnswer(result, now: now, trailingPush: trailingPush, pushDue: pushDue))
            }
        case .serve(let route, let method, let fields, let deviceID, let now):
            let client = client(of: request)
            do {
                switch (route, method) {
                case (.provision, "POST"): respond(try provision(fields, deviceID: deviceID, client: client, now: now))
                case (.provision, _): respond(try deprovision(fields, deviceID: deviceID, now: now))
                default: respond(try status(fields, deviceID: deviceID, client: client, now: now))
                }
            } catch {
                respond(Self.storeUnavailable)
            }
        }
    }

    /// Who a request's signature checks are counted against (`SignatureBudget.client`).
    private func client(of request: HTTPServerRequest) -> String {
        signatures?.client(peer: request.peer, realIP: request.header("x-real-ip")) ?? request.peer
    }

    /// Takes one signature check for `client`: nil when allowed, else the 429 answer.
    private func signatureCheck(_ client: String, now: Int64) -> HTTPServerResponse? {
        guard let signatures, let seconds = signatures.take(client, now: now) else { return nil }
        return Self.rateLimited(seconds)
    }

    /// What a request needs once its route, method, media type and body are checked.
    private enum Prepared {
        case answer(HTTPServerResponse)
        case trigger(deviceID: String, now: Int64)
        case serve(Route, method: String, fields: [String: String], deviceID: String, now: Int64)
    }

    private func prepare(_ request: HTTPServerRequest) -> Prepared {
        var path = request.path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        guard let route = Route(rawValue: path) else { return .answer(Self.error(404, "not-found")) }
        let allowed: [String] = switch route {
        case .provision: ["POST", "DELETE"]
        case .trigger, .status, .authenticatedTrigger: ["POST"]
        case .health: ["GET", "HEAD"]
        }
        guard allowed.contains(request.method) else {
            return .answer(Self.error(405, "method-not-allowed", headers: [("Allow", allowed.joined(separator: ", "))]))
        }
        if route == .health { return .answer(.json(200, JSON.object([("status", .string("ok")), ("version", .string(Self.version))]).rendered())) }
        let contentType = request.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard contentType == "application/json" else { return .answer(Self.error(415, "unsupported-media-type")) }
        if route == .authenticatedTrigger { return .answer(authenticatedTrigger(request.body, client: client(of: request))) }
        guard let fields = try? StrictJSONObject.strings(request.body) else { return .answer(Self.error(400, "malformed-json")) }
        guard let rawDevice = fields["device_id"] else { return .answer(Self.error(400, "missing-device-id")) }
        guard let deviceID = RelayIdentifiers.deviceID(rawDevice) else { return .answer(Self.error(400, "bad-device-id")) }
        let now = clock.now().unixMilliseconds
        if route == .trigger { return .trigger(deviceID: deviceID, now: now) }
        return .serve(route, method: request.method, fields: fields, deviceID: deviceID, now: now)
    }

    // MARK: The store

    /// Runs `body` as one write: queued to the writer (answered on its thread after the durable commit) or, without
    /// a writer, at once on a pool connection.
    private func write<T>(_ body: @escaping (FrontDoorStore) throws -> T, then: @escaping (Result<T, any Error>) -> Void) {
        let keyring = keyring
        if let writer {
            writer.submit({ database in try body(FrontDoorStore(database: database, keyring: keyring)) }, completion: then)
        } else {
            then(Result { try pool.with { database in try body(FrontDoorStore(database: database, keyring: keyring)) } })
        }
    }

    /// `write`, waiting for the commit.
    private func writeNow<T>(_ body: @escaping (FrontDoorStore) throws -> T) throws -> T {
        let keyring = keyring
        if let writer { return try writer.perform { database in try body(FrontDoorStore(database: database, keyring: keyring)) } }
        return try pool.with { database in try body(FrontDoorStore(database: database, keyring: keyring)) }
    }

    /// A read on a pool connection of its own.
    private func readNow<T>(_ body: (FrontDoorStore) throws -> T) throws -> T {
        try pool.with { database in try body(FrontDoorStore(database: database, keyring: keyring)) }
    }

    private func provision(_ fields: [String: String], deviceID: String, client: String, now: Int64) throws -> HTTPServerResponse {
        guard let rawToken = fields["apns_token"], let evidence = fields["transaction_id"] else { return Self.error(400, "missing-field") }
        guard let token = RelayIdentifiers.apnsToken(rawToken) else { return Self.error(400, "bad-apns-token") }
        var environment = APNsEnvironment.production
        if let name = fields["apns_environment"] {
            guard let parsed = APNsEnvironment(rawValue: name) else { return Self.error(400, "bad-apns-environment") }
            environment = parsed
        }
        let limit = Self.provisionLimit
        if let seconds = try writeNow({ try $0.rateLimit(route: "provision", deviceID: deviceID, limit: limit, now: now) }) { return Self.rateLimited(seconds) }
        if Self.isLegacyID(evidence) {
            guard now < Entitlement.legacyCutoffMilliseconds else { return Self.error(403, "legacy-transaction-retired") }
            switch try writeNow({ try $0.refreshLegacy(deviceID: deviceID, token: token, transactionID: evidence, now: now) }) {
            case .refreshed: return Self.provisioned
            case .notRegistered: return Self.error(409, "no-legacy-registration")
            }
        }
        if let limited = signatureCheck(client, now: now) { return limited }
        let verified: SignedTransactionVerifier.Verified
        do { verified = try SignedTransactionVerifier.verify(evidence, configuration: storeKit) } catch { return Self.refusal(error) }
        if let lapse = verified.lapse(now: now) {
            try writeNow { try $0.recordLapse(deviceID: deviceID, verified: verified, revokedAt: verified.revokedAt) }
            return Self.refusal(lapse)
        }
        let caps = caps
        switch try writeNow({ try $0.provision(deviceID: deviceID, token: token, environment: environment, verified: verified, caps: caps, now: now) }) {
        case .provisioned: return Self.provisioned
        case .tooManyDevices: return Self.error(403, "too-many-devices")
        case .stale: return Self.error(409, "stale-transaction")
        case .conflicting: return Self.error(409, "conflicting-subscription")
        }
    }

    private func deprovision(_ fields: [String: String], deviceID: String, now: Int64) throws -> HTTPServerResponse {
        guard let rawToken = fields["apns_token"] else { return Self.error(400, "missing-field") }
        guard let token = RelayIdentifiers.apnsToken(rawToken) else { return Self.error(400, "bad-apns-token") }
        let limit = Self.provisionLimit
        if let seconds = try writeNow({ try $0.rateLimit(route: "provision", deviceID: deviceID, limit: limit, now: now) }) { return Self.rateLimited(seconds) }
        _ = try writeNow { try $0.registry.unregister(deviceID: deviceID, token: token) }
        return .json(200, "{\"status\":\"deprovisioned\"}")
    }

    /// The answer to a trigger whose store effect ended with `result` (calling `pushDue` for an accepted one).
    private static func triggerAnswer(_ result: Result<FrontDoorStore.TriggerOutcome, any Error>, now: Int64, trailingPush: Bool,
                                      pushDue: (Int64) -> Void) -> HTTPServerResponse {
        guard case .success(let outcome) = result else { return storeUnavailable }
        switch outcome {
        case .rateLimited(let seconds): return rateLimited(seconds)
        case .accepted(let tokens, let due):
            if due <= now || trailingPush { pushDue(due) }
            return .json(202, JSON.object([("status", .string("accepted")), ("devices_notified", .int(Int64(tokens)))]).rendered())
        case .notProvisioned: return error(403, "no-active-subscription")
        case .expired: return error(402, "subscription-expired")
        case .revoked: return error(403, "subscription-revoked")
        case .authenticationRequired: return error(401, "authenticated-trigger-required")
        case .replayed: return refusal(TriggerV2.Refusal.replayedNonce)
        }
    }

    /// `POST /api/v2/trigger`, checked in the order docs/protocols/trigger-v2.md gives: syntax and caps, the
    /// timestamp, then the store's cheap checks (rate limit, registration, active subscription), and only then the
    /// certificate hash, its strict parse and the signature; last the nonce, the pin and the observation.
    func authenticatedTrigger(_ body: [UInt8], client: String) -> HTTPServerResponse {
        let request: TriggerV2.Request
        do { request = try TriggerV2.parse(body) } catch { return Self.refusal(error) }
        let now = clock.now().unixMilliseconds
        guard TriggerV2.isFresh(request.timestampMilliseconds, now: now) else { return Self.refusal(TriggerV2.Refusal.timestampOutOfWindow) }
        do {
            let limit = Self.triggerLimit
            let precheck = try writeNow { try $0.precheckAuthenticated(deviceID: request.deviceID, limit: limit, now: now) }
            guard case .accepted = precheck else { return answer(precheck, now: now) }
            if let limited = signatureCheck(client, now: now) { return limited }
            do { try TriggerV2.authenticate(request) } catch { return Self.refusal(error) }
            // A nonce must outlive every moment its timestamp is still fresh on some host: the window after the
            // timestamp, plus the clock spread between hosts the relay tolerates.
            let expiresAt = request.timestampMilliseconds + TriggerV2.windowMilliseconds + Self.nonceClockMargin
            let outcome = try writeNow { try $0.acceptAuthenticated(deviceID: request.deviceID, nonce: request.nonce, nonceExpiresAt: expiresAt, now: now) }
            return answer(outcome, now: now)
        } catch {
            return Self.storeUnavailable
        }
    }

    /// How much longer than the freshness window a nonce is kept, for hosts whose clocks run behind.
    static let nonceClockMargin: Int64 = 60_000

    static func refusal(_ refusal: TriggerV2.Refusal) -> HTTPServerResponse { error(refusal.status, refusal.word) }

    /// The answer to a trigger outcome reached on this thread (the v2 route).
    private func answer(_ outcome: FrontDoorStore.TriggerOutcome, now: Int64) -> HTTPServerResponse {
        Self.triggerAnswer(.success(outcome), now: now, trailingPush: trailingPush, pushDue: pushDue)
    }

    private func status(_ fields: [String: String], deviceID: String, client: String, now: Int64) throws -> HTTPServerResponse {
        guard let evidence = fields["signed_transaction"] else { return Self.error(400, "missing-field") }
        let limit = Self.statusLimit
        if let seconds = try writeNow({ try $0.rateLimit(route: "status", deviceID: deviceID, limit: limit, now: now) }) { return Self.rateLimited(seconds) }
        if Self.isLegacyID(evidence) { return Self.error(403, "no-verified-subscription") }
        if let limited = signatureCheck(client, now: now) { return limited }
        let verified: SignedTransactionVerifier.Verified
        do { verified = try SignedTransactionVerifier.verify(evidence, configuration: storeKit) } catch { return Self.refusal(error) }
        if let lapse = verified.lapse(now: now) {
            // Verified evidence closes the gate whichever route it reaches (newer than the stored record only).
            try writeNow { try $0.recordLapse(deviceID: deviceID, verified: verified, revokedAt: verified.revokedAt) }
            return Self.refusal(lapse)
        }
        switch try readNow({ try $0.status(deviceID: deviceID, verified: verified, now: now) }) {
        case .noMatchingSubscription: return Self.error(403, "no-verified-subscription")
        case .observed(let at, let authenticated):
            var members: [(String, JSON)] = [("v1_trigger_observed", .bool(at != nil))]
            if let at { members.append(("last_trigger_observed_at", .string(Self.seconds(at)))) }
            members.append(("last_trigger_authenticated", .bool(authenticated)))
            members.append(("checked_at", .string(Self.seconds(now))))
            return .json(200, JSON.object(members).rendered())
        }
    }

    // MARK: Answers

    static let provisioned = HTTPServerResponse.json(200, "{\"status\":\"provisioned\"}")
    /// The store failed (transient; nothing of the request was recorded).
    static let storeUnavailable = error(503, "store-unavailable", headers: [("Retry-After", "5")])

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

    /// RFC 3339 to the second, UTC (`2026-07-12T10:00:00Z`), as docs/protocols/relay-api.md shows.
    static func seconds(_ milliseconds: Int64) -> String {
        Date(unixMilliseconds: milliseconds).rfc3339Seconds
    }
}
