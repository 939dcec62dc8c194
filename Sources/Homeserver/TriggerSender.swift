import Cryptography
import Foundation
import Runner
import Store

/// The helper's one way to send a wake-up trigger (`retrigger-stale` and the change watcher alike): authenticated
/// (v2) when it can sign with this Syncthing's key, v1 otherwise, by the rules of docs/protocols/trigger-v2.md
/// ("The helper"):
///
/// - key readable → v2; a 202 pins this helper to v2 (`v2_accepted_at` in its store), and from then on it never
///   sends v1 — an unreadable key is then a configuration error, and a 404/405 on the v2 route is `.notFound`;
/// - a relay that answers the v2 route with 404 or 405 (it predates v2) gets v1 in the same pass, and v2 is tried
///   again only after one cadence;
/// - key unreadable (and not pinned) → v1; `job doctor` warns with the fix.
struct TriggerSender {
    let relay: RelayClient
    let key: Result<DeviceSigningKey, DeviceKeyFiles.Unusable>
    let cadenceSeconds: Int

    /// What one send did.
    struct Sent {
        let answer: RelayAnswer
        let status: Int?
        /// Whether the trigger sent was a v2 one.
        let authenticated: Bool
        /// When v1 was sent: why.
        let fallback: TriggerFallback?
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

    /// Sends one trigger for `deviceID` (this Syncthing's own) at `now`, recording the pin state in `db`.
    func send(deviceID: String, now: Date, db: Database) throws -> Sent {
        var state = try PinState.load(db)
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
                    try state.save(db)
                    fallback = .relayWithoutV2
                    break
                }
                // A replayed nonce cannot happen twice with fresh nonces: retried like a transient fault.
                let answer = status == 409 ? .transient : RelayAnswer.classify(status: status, retryAfter: retryAfter, now: now)
                if answer == .sent && (state.acceptedAt == nil || state.unsupportedAt != nil) {
                    state.acceptedAt = state.acceptedAt ?? nowMilliseconds
                    state.unsupportedAt = nil
                    try state.save(db)
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
}
