/// `job pool verify`'s logic: replays the native selector over a pool and checks every covered day (docs/protocols/jwt-pool.md §3).
///
/// This is the pool's cross-language contract (docs/protocols/jwt-pool.md §3) as a runnable check. For every day the pool claims to cover it
/// picks `tokens[day % tokens.count]`, exactly as both native fetchers do, and checks that the token reads and
/// was signed by the expected identity, that its window contains the whole day (opening midnight to closing
/// midnight), that it grants that day only, and that what the store recorded for the slot matches the token.
/// It then checks that all tokens are distinct, and that for one whole cycle of days on either side of the
/// covered range the token the selector would pick is refused by Endorser on that day (no credential beyond
/// the pool). Pure: it takes the tokens, the plan, the identity and `now`, and touches nothing.
package enum PoolVerifier {
    /// What was found for one day.
    package struct DayResult: Sendable, Equatable {
        package let day: Int64
        package let slot: Int
        /// Fixed phrases, empty when the day is fine. Never token content.
        package let problems: [String]
        package var passed: Bool { problems.isEmpty }
    }

    /// The whole verdict.
    package struct Report: Sendable {
        package let plan: PoolPlan
        /// One entry per covered day, in day order.
        package let coveredDays: [DayResult]
        /// The uncovered days (one cycle before, one after) whose selected token Endorser would still accept.
        package let leakingDays: [DayResult]
        /// Problems of the pool as a whole (size, duplicates).
        package let poolProblems: [String]
        /// Today (by the injected clock): its day, and whether the selected token is accepted right now;
        /// `accepted` is nil when today is outside the covered range (no credential, by design).
        package let today: (day: Int64, slot: Int?, accepted: Bool?)
        /// Days checked beyond the pool.
        package let uncoveredDaysChecked: Int

        package var passed: Bool {
            poolProblems.isEmpty && leakingDays.isEmpty && coveredDays.allSatisfy(\.passed) && today.accepted != false
        }
    }

    /// Verifies `tokens` (in slot order) against `plan`, signed by `issuer`, at `nowSeconds`.
    /// `recorded` is what the store says each slot holds (`DayWindow` per slot), checked against the tokens.
    package static func verify(tokens: [String], plan: PoolPlan, issuer: String, recorded: [DayWindow]?, nowSeconds: Int64) -> Report {
        var poolProblems: [String] = []
        if tokens.count != plan.size {
            poolProblems.append("the pool holds \(tokens.count) tokens but claims \(plan.size) days")
        }
        var firstSlotOfToken: [String: Int] = [:]
        for (slot, token) in tokens.enumerated() {
            if let earlier = firstSlotOfToken[token] {
                poolProblems.append("slot \(slot) holds the same token as slot \(earlier)")
            } else {
                firstSlotOfToken[token] = slot
            }
        }

        // Read every token once.
        let inspections: [Result<DayTokenInspection, DayTokenInspection.Failure>] = tokens.map { token in
            Result { () throws(DayTokenInspection.Failure) in try DayTokenInspection(token: token, expectedIssuer: issuer) }
        }

        var covered: [DayResult] = []
        covered.reserveCapacity(plan.size)
        for day in plan.days {
            let slot = PoolCalendar.slot(forDay: day, size: max(tokens.count, 1))
            var problems: [String] = []
            guard slot < inspections.count else {
                covered.append(DayResult(day: day, slot: slot, problems: ["no token in the selected slot"]))
                continue
            }
            switch inspections[slot] {
            case .failure(let failure):
                problems.append(failure.description)
            case .success(let token):
                if token.notBefore > PoolCalendar.opening(of: day) {
                    problems.append("window opens after the day's opening midnight")
                }
                if token.expires < PoolCalendar.closing(of: day) {
                    problems.append("window closes before the day's closing midnight")
                }
                if token.isAcceptedByEndorser(anywhereIn: day - 2) || token.isAcceptedByEndorser(anywhereIn: day + 2) {
                    problems.append("window grants more than its own day")
                } else if token.expires - token.notBefore > DayWindow.maximumWidthSeconds {
                    problems.append("window is longer than a day plus the maximum slack on each end")
                }
                if let recorded, slot < recorded.count {
                    let entry = recorded[slot]
                    if entry.day != day || entry.notBefore != token.notBefore || entry.expires != token.expires {
                        problems.append("the store's record of the slot does not match its token")
                    }
                }
            }
            covered.append(DayResult(day: day, slot: slot, problems: problems))
        }

        // One full cycle on each side: every slot is selected once for an uncovered day.
        var leaking: [DayResult] = []
        var checked = 0
        if !tokens.isEmpty {
            let before = (plan.firstDay - Int64(plan.size))...(plan.firstDay - 1)
            let after = (plan.lastDay + 1)...(plan.lastDay + Int64(plan.size))
            for day in Array(before) + Array(after) {
                checked += 1
                let slot = PoolCalendar.slot(forDay: day, size: tokens.count)
                if case .success(let token) = inspections[slot], token.isAcceptedByEndorser(anywhereIn: day) {
                    leaking.append(DayResult(day: day, slot: slot, problems: ["outside the pool, yet the selected token is accepted on this day"]))
                }
            }
        }

        let today = PoolCalendar.epochDay(unixSeconds: nowSeconds)
        var todaySlot: Int?
        var todayAccepted: Bool?
        if plan.covers(today), !tokens.isEmpty {
            let slot = PoolCalendar.slot(forDay: today, size: tokens.count)
            todaySlot = slot
            if case .success(let token) = inspections[slot] {
                todayAccepted = token.isAcceptedByEndorser(atUnixSeconds: nowSeconds)
            } else {
                todayAccepted = false
            }
        }

        return Report(plan: plan, coveredDays: covered, leakingDays: leaking, poolProblems: poolProblems,
                      today: (today, todaySlot, todayAccepted), uncoveredDaysChecked: checked)
    }
}
