import Foundation
import Relay
import Store

/// `send-wakeups` under SIGKILL, against the HTTP/2 APNs stand-in: no token pushed twice within one 30 s
/// debounce window (judged from what the stand-in received, by each request's `apns-expiration`, which
/// carries the pass's clock), every due token pushed at least once, no other token pushed, each token's
/// recorded result the one the stand-in gave, every trigger consumed.
///
/// The passes of a round run on an injected clock: the killed passes and the first rerun come 0–20 s
/// apart (so reruns land inside the window of the pass they follow), later reruns 31 s apart.
///
/// `graceful` (passes stopped by SIGTERM, `ChaosLoop.signal`): every answer received is recorded before the pass
/// exits, so the stricter rule holds — each due token is pushed exactly once for the round's one trigger, even
/// by reruns after the window.
package final class SendWakeupsChaos: ChaosScenario {
    package let job = "send-wakeups"
    let store: ChaosStore
    let process: ChaosProcess
    let tokens: Int
    let seed: UInt64
    let graceful: Bool
    let t0: Int64 = 1_780_000_000

    /// Per token (index k = token id − 1): the stand-in's scripted status, whether it must be pushed.
    private var scripted: [Int] = []
    private var due: [Bool] = []
    private var triggered: [Bool] = []
    private var tokenText: [String] = []
    private var standIn: APNsStandInProcess?
    private var roundOffset: UInt64 = 0
    private var now: Int64 = 0
    private var passesInRound = 0
    /// Set once the round's first undisturbed pass has run: later ones come 31 s apart.
    private var isAfterFirstSettle = false

    package init(store: ChaosStore, process: ChaosProcess, tokens: Int, seed: UInt64, graceful: Bool = false) {
        self.store = store
        self.process = process
        self.tokens = tokens - tokens % 2
        self.seed = seed
        self.graceful = graceful
    }

    /// The stand-in's endpoint and provider key (after `prepare`).
    package var passEnvironment: [String: String] { standIn?.environment ?? [:] }

    package func prepare() throws {
        var random = ChaosRandom(seed: seed ^ 0x5E4D)
        let devices = tokens / 2
        // 20 % of the Device IDs triggered; 2 % of the other tokens awaiting a retry; 5 % 410, 5 % 400.
        triggered = (0..<devices).map { _ in Int.random(in: 0..<100, using: &random) < 20 }
        var retry = [Bool](repeating: false, count: tokens)
        for k in 0..<tokens where !triggered[k / 2] && Int.random(in: 0..<100, using: &random) < 2 { retry[k] = true }
        due = (0..<tokens).map { triggered[$0 / 2] || retry[$0] }
        scripted = (0..<tokens).map { _ in
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<5: return 410
            case 5..<10: return 400
            default: return 200
            }
        }
        tokenText = (0..<tokens).map { String(format: "%08x%02x", $0 / 2, $0 % 2) + String(repeating: "5e", count: 27) }
        var answers: [String: (status: Int, reason: String?, timestamp: Int64?)] = [:]
        for k in 0..<tokens where scripted[k] != 200 {
            answers[tokenText[k]] = scripted[k] == 410 ? (410, "Unregistered", t0 * 1000 - 5_000) : (400, "BadDeviceToken", nil)
        }
        standIn = try APNsStandInProcess(directory: store.directory, answers: answers)

        let db = try store.createTemplate(ChaosProcess(executable: process.executable, environment: process.environment))
        let texts = tokenText
        try RegistrationSeeder.seed(database: db, storeKey: try store.templateKey(), devices: devices, tokensPerDevice: 2,
                                    registeredAt: t0 * 1000 - 600_000, triggeredAt: nil, deviceID: { "chaos-wake-\($0)" },
                                    token: { i, j in texts[i * 2 + j] }, result: { _, _ in .none })
        guard try db.scalar("SELECT max(id) FROM relay_tokens") == Int64(tokens), try db.scalar("SELECT max(id) FROM relay_devices") == Int64(devices) else {
            throw ChaosFailure("the seeded ids are not in seeding order")
        }
        let plan = (triggered, retry)
        try db.write { db in
            for i in 0..<devices where plan.0[i] {
                try db.execute("UPDATE relay_devices SET last_trigger_at = ? WHERE id = ?", [t0 * 1000 - 60_000, Int64(i + 1)])
            }
            for k in 0..<tokens where plan.1[k] {
                try db.execute("UPDATE relay_tokens SET result_status = 503, result_reason = 'ServiceUnavailable', result_at = ?, retry_due = 1 WHERE id = ?",
                               [t0 * 1000 - 120_000, Int64(k + 1)])
            }
        }
        try store.sealTemplate(db)
    }

    package var storePath: String { store.store }

    package func beginRound(_ round: Int) throws {
        try store.freshCopy()
        roundOffset = standIn?.logOffset() ?? 0
        now = t0
        passesInRound = 0
        isAfterFirstSettle = false
    }

    package func nextPassArguments(settling: Bool, random: inout ChaosRandom) -> [String] {
        if passesInRound > 0 {
            // Kills and the first rerun close together (inside the window); later reruns after it.
            now += settling && isAfterFirstSettle ? 31 : Int64.random(in: 0...20, using: &random)
        }
        if settling { isAfterFirstSettle = true }
        passesInRound += 1
        return ["--store", store.store, "--now", "@\(now)", "--json", "send-wakeups"]
    }

    package func isSettled(counts: [String: Int]) -> Bool {
        guard let db = try? Database(path: store.store) else { return false }
        let pending: Int? = try? db.scalar("""
            SELECT (SELECT count(*) FROM relay_devices WHERE last_trigger_at > coalesce(last_push_at, 0))
                 + (SELECT count(*) FROM relay_tokens WHERE retry_due = 1)
            """)
        return pending == 0
    }

    package func violations() throws -> [String] {
        guard let standIn else { throw ChaosFailure("no stand-in") }
        var violations: [String] = []
        let requests = try standIn.requests(since: roundOffset)
        var index: [String: Int] = [:]
        for (k, text) in tokenText.enumerated() { index[text] = k }
        var pushes: [Int: [Int64]] = [:]
        var refused = 0, unknown = 0
        for request in requests {
            if !(request["violation"] is NSNull) { refused += 1 }
            guard let token = request["token"] as? String, let k = index[token],
                  let expiration = (request["expiration"] as? String).flatMap(Int64.init) else { unknown += 1; continue }
            pushes[k, default: []].append(expiration - 3600)
        }
        if refused > 0 { violations.append("the stand-in refused \(refused) malformed request(s)") }
        if unknown > 0 { violations.append("\(unknown) request(s) for no seeded token") }
        var doubled = 0, lost = 0, unwanted = 0, repeated = 0
        for k in 0..<tokens {
            let times = (pushes[k] ?? []).sorted()
            if due[k] && times.isEmpty { lost += 1 }
            if !due[k] && !times.isEmpty { unwanted += 1 }
            if zip(times, times.dropFirst()).contains(where: { $1 - $0 < 30 }) { doubled += 1 }
            if times.count > 1 { repeated += 1 }
        }
        if doubled > 0 { violations.append("\(doubled) token(s) pushed twice within one 30 s window") }
        if graceful && repeated > 0 { violations.append("\(repeated) token(s) pushed more than once for the round's one trigger (passes stopped by SIGTERM)") }
        if lost > 0 { violations.append("\(lost) due token(s) never pushed") }
        if unwanted > 0 { violations.append("\(unwanted) token(s) pushed that were not due") }

        let db = try Database(path: store.store)
        violations += try ChaosStore.commonViolations(db, stopped: graceful)
        var wrongResult = 0
        try db.forEachRow("SELECT id, result_status, retry_due FROM relay_tokens ORDER BY id") { row in
            let k = Int(try row.get(0, as: Int64.self)) - 1
            let status = try row.get(1, as: Int?.self)
            let retryDue = try row.get(2, as: Int.self)
            let wrong = due[k] ? (status != scripted[k] || retryDue != 0) : status != nil
            if wrong { wrongResult += 1 }
        }
        if wrongResult > 0 { violations.append("\(wrongResult) token(s) with a recorded result other than the stand-in's answer") }
        let unconsumed: Int = try db.scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at > coalesce(last_push_at, 0)") ?? -1
        if unconsumed != 0 { violations.append("\(unconsumed) trigger(s) never consumed") }
        let pushedIdle: Int = try db.scalar("SELECT count(*) FROM relay_devices WHERE last_trigger_at IS NULL AND last_push_at IS NOT NULL") ?? -1
        if pushedIdle != 0 { violations.append("\(pushedIdle) untriggered Device ID(s) marked pushed") }
        return violations
    }

    package func finish() { standIn?.stop() }
}
