import Foundation
import Relay
import Store

/// `clean-tokens` under SIGKILL: exactly the invalid tokens gone, every other row untouched, Device IDs
/// left without a token gone with them.
///
/// The seed gives each token one of the cases below, drawn at random; the model — which tokens must go —
/// is the case table itself (`Case.removed`), written here from APNs's documented semantics, not taken
/// from the job's rule.
package final class CleanTokensChaos: ChaosScenario {
    package let job = "clean-tokens"
    let store: ChaosStore
    let process: ChaosProcess
    let tokens: Int
    let seed: UInt64
    let registeredAt: Int64 = 1_780_000_000_000

    /// What the seed recorded on a token.
    enum Case: CaseIterable {
        case never, delivered, badDeviceToken, unregisteredAfter, unregisteredBefore, expiredTokenAfter, notForTopic,
             badThenReregistered, tooManyRequests

        /// Whether the token is dead for good (the model).
        var removed: Bool {
            switch self {
            case .badDeviceToken, .unregisteredAfter, .expiredTokenAfter, .notForTopic: return true
            // Not yet pushed, delivered, a 410 older than the registration (provisioned again), a 400 recorded
            // before the token was registered again, a throttled push: live.
            case .never, .delivered, .unregisteredBefore, .badThenReregistered, .tooManyRequests: return false
            }
        }
    }

    private var cases: [Case] = []
    /// Digest of every row that must survive, taken from the template.
    private var survivorDigest: [Int64: UInt64] = [:]

    package init(store: ChaosStore, process: ChaosProcess, tokens: Int, seed: UInt64) {
        self.store = store
        self.process = process
        self.tokens = tokens - tokens % 2
        self.seed = seed
    }

    package func prepare() throws {
        var random = ChaosRandom(seed: seed ^ 0xC1EA)
        // A third of the tokens removable, so a pass spans several 1,000-row batches.
        let weighted: [(Case, Int)] = [(.never, 10), (.delivered, 40), (.badDeviceToken, 10), (.unregisteredAfter, 10), (.unregisteredBefore, 6),
                                       (.expiredTokenAfter, 6), (.notForTopic, 6), (.badThenReregistered, 6), (.tooManyRequests, 6)]
        let total = weighted.reduce(0) { $0 + $1.1 }
        cases = (0..<tokens).map { _ in
            var pick = Int.random(in: 0..<total, using: &random)
            for (c, w) in weighted { if pick < w { return c }; pick -= w }
            return .delivered
        }
        let db = try store.createTemplate(process)
        let plan = cases
        try RegistrationSeeder.seed(database: db, storeKey: try store.templateKey(), devices: tokens / 2, tokensPerDevice: 2, registeredAt: registeredAt,
                                    triggeredAt: nil, deviceID: { "chaos-device-\($0)" }, token: { i, j in String(format: "%08x%02x", i, j) + String(repeating: "c4", count: 27) },
                                    result: { i, j in
                                        switch plan[i * 2 + j] {
                                        case .never: return .none
                                        case .delivered, .tooManyRequests: return .delivered
                                        case .badDeviceToken, .badThenReregistered, .notForTopic: return .badDeviceToken
                                        case .unregisteredAfter, .expiredTokenAfter: return .unregisteredAfterRegistration
                                        case .unregisteredBefore: return .unregisteredBeforeRegistration
                                        }
                                    })
        guard try db.scalar("SELECT count(*) FROM relay_tokens") == tokens, try db.scalar("SELECT max(id) FROM relay_tokens") == Int64(tokens) else {
            throw ChaosFailure("the seeded token ids are not 1…\(tokens) in seeding order")
        }
        // The cases the seeder has no word for, written directly (token id k+1 is case k).
        try db.write { db in
            for (k, c) in plan.enumerated() {
                let id = Int64(k + 1)
                switch c {
                case .expiredTokenAfter: try db.execute("UPDATE relay_tokens SET result_reason = 'ExpiredToken' WHERE id = ?", [id])
                case .notForTopic: try db.execute("UPDATE relay_tokens SET result_reason = 'DeviceTokenNotForTopic' WHERE id = ?", [id])
                case .badThenReregistered: try db.execute("UPDATE relay_tokens SET registered_at = result_at + 60000 WHERE id = ?", [id])
                case .tooManyRequests: try db.execute("UPDATE relay_tokens SET result_status = 429, result_reason = 'TooManyRequests', retry_due = 1 WHERE id = ?", [id])
                default: break
                }
            }
        }
        survivorDigest = try Self.digests(db).filter { !plan[Int($0.key) - 1].removed }
        try store.sealTemplate(db)
    }

    package var storePath: String { store.store }

    package func beginRound(_ round: Int) throws { try store.freshCopy() }

    package func nextPassArguments(settling: Bool, random: inout ChaosRandom) -> [String] {
        ["--store", store.store, "--now", "@\(registeredAt / 1000 + 86_400)", "--json", "clean-tokens"]
    }

    package func isSettled(counts: [String: Int]) -> Bool { true }

    package func violations() throws -> [String] {
        let db = try Database(path: store.store)
        var violations = try ChaosStore.commonViolations(db)
        let now = try Self.digests(db)
        let unexpectedlyKept = now.keys.filter { cases[Int($0) - 1].removed }.count
        let lost = survivorDigest.keys.filter { now[$0] == nil }.count
        let altered = survivorDigest.filter { id, digest in now[id].map { $0 != digest } ?? false }.count
        if unexpectedlyKept > 0 { violations.append("\(unexpectedlyKept) invalid token(s) still present") }
        if lost > 0 { violations.append("\(lost) live token(s) removed") }
        if altered > 0 { violations.append("\(altered) live token row(s) altered") }
        // Device IDs: exactly those with a surviving token remain (each device i holds token ids 2i+1, 2i+2).
        let expectedDevices = (0..<tokens / 2).filter { !cases[$0 * 2].removed || !cases[$0 * 2 + 1].removed }.count
        let devices: Int = try db.scalar("SELECT count(*) FROM relay_devices") ?? -1
        if devices != expectedDevices { violations.append("\(devices) Device IDs left, expected \(expectedDevices)") }
        let empty: Int = try db.scalar("SELECT count(*) FROM relay_devices d WHERE NOT EXISTS (SELECT 1 FROM relay_tokens t WHERE t.device_id = d.id)") ?? -1
        if empty != 0 { violations.append("\(empty) Device ID(s) left without a token") }
        return violations
    }

    /// id → FNV-1a digest of every column of each `relay_tokens` row.
    static func digests(_ db: Database) throws -> [Int64: UInt64] {
        var out: [Int64: UInt64] = [:]
        try db.forEachRow("""
            SELECT id, quote(device_id) || quote(token_index) || quote(token_sealed) || environment || registered_at || quote(result_status)
                   || quote(result_reason) || quote(result_at) || quote(invalidated_at) || retry_due FROM relay_tokens
            """) { row in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in try row.get(1, as: String.self).utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            out[try row.get(0, as: Int64.self)] = hash
        }
        return out
    }
}
