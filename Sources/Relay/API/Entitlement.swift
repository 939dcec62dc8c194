/// What lets a Device ID's triggers through, as stored in `relay_entitlements`, and its state at an instant.
struct Entitlement: Equatable, Sendable {
    enum Kind: String, Sendable, Equatable { case operatorProvisioned = "operator", storekit, legacy }

    var kind: Kind
    var originalIndex: [UInt8]?
    var productID: String?
    var environment: String?
    var signedAt: Int64?
    var expiresAt: Int64?
    var revokedAt: Int64?

    /// The legacy numeric-id window closes at the end of 2026-10-31 (UTC): from 2026-11-01T00:00:00Z on, the
    /// numeric id refreshes nothing and legacy registrations stop gating triggers through.
    static let legacyCutoffMilliseconds: Int64 = 1_793_491_200_000

    enum State: Equatable, Sendable { case active, expired, revoked }

    /// Pure: whether the entitlement lets a trigger through at `now`.
    func state(now: Int64) -> State {
        if revokedAt != nil { return .revoked }
        switch kind {
        case .operatorProvisioned:
            if let expiresAt, expiresAt <= now { return .expired }
            return .active
        case .storekit:
            guard let expiresAt, expiresAt > now else { return .expired }
            return .active
        case .legacy:
            return now < Self.legacyCutoffMilliseconds ? .active : .expired
        }
    }
}
