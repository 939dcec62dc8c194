/// The independent model of the multi-host relay run: from the triggers the clients saw accepted and the pushes
/// the APNs stand-in logged, what must hold — computed from the harness's own plan, never from the store or the
/// product's rules.
///
/// A push has two times: when it reached the APNs stand-in (the stand-in's own clock, as an independent observer —
/// APNs, the phone — sees it), and the clock of the `send-wakeups` pass that sent it, the whole second of its
/// `apns-expiration` minus 3600 (`APNsPush`). A trigger's time is the real clock when its accepted request was
/// sent. Every process runs on the one real clock of this machine, so these compare:
/// - **none lost**: each token of a Device ID with an accepted trigger has a push from a pass whose clock is at or
///   after the trigger's second (a pass that started after the trigger was sent can only push after it; the
///   one-second grain lets a pass up to one second older count), or from a pass whose clock is less than 30 s
///   before the trigger — the 30 s debounce of docs/protocols/relay-api.md: a trigger inside the window after a push is observed, never pushed
///   again (the one-second grain again counts a pass up to one second older). A trigger sent while that pass was
///   still pushing is judged the same way, by the pass's clock (docs/roles/relay.md, "A trigger during a pass"):
///   the product stores that clock as the push time. Judging losses by the pass's clock is never looser than
///   judging them by arrival: a push arrives after its pass's clock, so a trigger covered here has a push that
///   reached APNs after it, or one less than 30 s before it;
/// - **none doubled**: no token has two pushes that *arrived* less than 30 s apart. Never judged by the passes'
///   clocks: a pass still pushing 30 s after it started carries its start time, so two passes' pushes of one token
///   can arrive moments apart while their clocks are 30 s apart;
/// - **only provisioned**: every push is for a token provisioned on a Device ID that some client triggered.
package struct PushLogModel: Sendable {
    /// One accepted trigger: the Device ID's index in the plan and when its accepted request was sent (Unix ms).
    package struct Trigger: Sendable {
        package let device: Int
        package let sentAtMilliseconds: Int64
        package init(device: Int, sentAtMilliseconds: Int64) {
            self.device = device
            self.sentAtMilliseconds = sentAtMilliseconds
        }
    }

    /// One push the stand-in received: the token (hex), its pass's clock (Unix seconds) and when it arrived (Unix ms).
    package struct Push: Sendable {
        package let token: String
        package let passSecond: Int64
        package let arrivedAtMilliseconds: Int64
        package init(token: String, passSecond: Int64, arrivedAtMilliseconds: Int64) {
            self.token = token
            self.passSecond = passSecond
            self.arrivedAtMilliseconds = arrivedAtMilliseconds
        }
    }

    /// The provisioned tokens of each planned Device ID (index = the Device ID's index in the plan).
    package let tokens: [[String]]

    package init(tokens: [[String]]) { self.tokens = tokens }

    /// The debounce window the product promises (`WakeupDebounce`), restated here on purpose.
    package static let windowSeconds: Int64 = 30

    /// What the model found: each violation as one line, and the figures behind them.
    package struct Verdict: Sendable {
        package var violations: [String] = []
        package var pushes = 0
        package var tokensPushed = 0
        /// Tokens with two pushes that arrived less than 30 s apart.
        package var doubled = 0
        /// The shortest time between two arrivals of one token's pushes (ms); nil when no token was pushed twice.
        package var closestPairMilliseconds: Int64?
        /// (trigger, token) pairs with no push at or after the trigger.
        package var lost = 0
        /// The first lost ones: plan index of the Device ID, token number on it.
        package var lostTokens: [(device: Int, token: Int)] = []
    }

    /// Checks `pushes` against the `accepted` triggers; `attempted` are the Device IDs any trigger request was sent
    /// for (a request cut off by a kill may still have been recorded, so its Device ID may be pushed).
    package func verdict(accepted: [Trigger], attempted: Set<Int>, pushes: [Push]) -> Verdict {
        var verdict = Verdict()
        var owner: [String: Int] = [:]
        for (device, list) in tokens.enumerated() { for token in list { owner[token] = device } }
        var times: [String: [Int64]] = [:]
        var arrivals: [String: [Int64]] = [:]
        var foreign = 0, untriggered = 0
        for push in pushes {
            verdict.pushes += 1
            guard let device = owner[push.token] else { foreign += 1; continue }
            if !attempted.contains(device) { untriggered += 1 }
            times[push.token, default: []].append(push.passSecond)
            arrivals[push.token, default: []].append(push.arrivedAtMilliseconds)
        }
        verdict.tokensPushed = times.count
        for (token, list) in arrivals.sorted(by: { $0.key < $1.key }) {
            let sorted = list.sorted()
            let gaps = zip(sorted, sorted.dropFirst()).map { $1 - $0 }
            if let closest = gaps.min() { verdict.closestPairMilliseconds = min(verdict.closestPairMilliseconds ?? .max, closest) }
            if let closest = gaps.min(), closest < Self.windowSeconds * 1000 {
                verdict.doubled += 1
                if verdict.doubled <= 3 {
                    verdict.violations.append("token \(token.prefix(12))… pushed twice within 30 s: arrived \(closest) ms apart (pass clocks \((times[token] ?? []).sorted()))")
                }
            }
        }
        var latest: [Int: Int64] = [:]
        for trigger in accepted { latest[trigger.device] = max(latest[trigger.device] ?? .min, trigger.sentAtMilliseconds) }
        for (device, sentAt) in latest.sorted(by: { $0.key < $1.key }) {
            let second = sentAt >= 0 ? sentAt / 1000 : (sentAt - 999) / 1000
            // After the trigger, or debounced by a push less than 30 s before it (both one second coarse).
            let covered = { (pass: Int64) in pass + Self.windowSeconds + 1 > second }
            for (number, token) in tokens[device].enumerated() where !(times[token] ?? []).contains(where: covered) {
                verdict.lost += 1
                if verdict.lostTokens.count < 3 { verdict.lostTokens.append((device, number)) }
                if verdict.lost <= 3 {
                    verdict.violations.append("token \(token.prefix(12))… of Device ID #\(device) not pushed after its trigger at \(second): pass clocks \((times[token] ?? []).sorted())")
                }
            }
        }
        if verdict.doubled > 3 { verdict.violations.append("… \(verdict.doubled) token(s) in all pushed twice within one 30 s window") }
        if verdict.lost > 3 { verdict.violations.append("… \(verdict.lost) token(s) in all not pushed after an accepted trigger") }
        if foreign > 0 { verdict.violations.append("\(foreign) push(es) for a token never provisioned") }
        if untriggered > 0 { verdict.violations.append("\(untriggered) push(es) for a provisioned Device ID no client triggered") }
        return verdict
    }
}
