import Cryptography
import Foundation
import Runner

/// `job pool show|export|verify|clear`: inspect, hand off, check and clear the live pool.
///
/// Only `pool export` prints tokens (stdout, for `configureNativeFetcher`); `show` prints their windows only.
struct PoolShowCommand: Command {
    let path = ["pool", "show"]
    let summary = "the live pool per slot: epoch day, nbf, exp, whether live today — never the token"

    func run(_ context: JobContext) throws {
        let store = PoolStore(database: context.database)
        let today = PoolCalendar.epochDay(unixMilliseconds: context.nowMilliseconds)
        let (live, slots, lastFetch) = try context.database.read { _ in
            let live = try store.live()
            return (live, try live.map { try store.slots(of: $0.generationID) } ?? [], try FetchLog(database: context.database).latest())
        }
        guard let live else {
            if context.jsonOutput {
                context.printJSON(["pool": .null, "last_fetch": PoolOutput.json(lastFetch)])
            } else {
                context.print("no pool: background prefetch has no credential (run mint-pool)")
                PoolOutput.printLastFetch(lastFetch, context)
            }
            return
        }
        if context.jsonOutput {
            let rows: [JSON] = slots.map { record in
                ["slot": .number(record.slot), "day": .number(record.window.day), "date": .string(PoolCalendar.dateString(ofDay: record.window.day)),
                 "nbf": .number(record.window.notBefore), "exp": .number(record.window.expires), "live_today": .bool(record.window.day == today)]
            }
            context.printJSON(["pool": PoolOutput.summary(live, today: today), "slots": .array(rows), "last_fetch": PoolOutput.json(lastFetch)])
            return
        }
        context.print("identity: \(live.did)")
        context.print("covers \(PoolCalendar.dateString(ofDay: live.plan.firstDay)) … \(PoolCalendar.dateString(ofDay: live.plan.lastDay)) (\(live.plan.size) days, slack \(live.slackSeconds) s), minted \(Date(unixMilliseconds: live.issuedAt).rfc3339)")
        context.print(live.plan.slot(forDay: today).map { "today (\(PoolCalendar.dateString(ofDay: today))) uses slot \($0)" }
                      ?? "today (\(PoolCalendar.dateString(ofDay: today))) is outside the pool: no credential")
        var table = ["SLOT  DAY         NBF                       EXP                       TODAY"]
        for record in slots {
            let nbf = Date(timeIntervalSince1970: Double(record.window.notBefore)).rfc3339
            let exp = Date(timeIntervalSince1970: Double(record.window.expires)).rfc3339
            let slot = String(record.slot).padding(toLength: 6, withPad: " ", startingAt: 0)
            table.append("\(slot)\(PoolCalendar.dateString(ofDay: record.window.day))  \(nbf)  \(exp)  \(record.window.day == today ? "live" : "-")")
        }
        table.forEach(context.print)
        PoolOutput.printLastFetch(lastFetch, context)
    }
}

struct PoolExportCommand: Command {
    let path = ["pool", "export"]
    let summary = "print the live pool's tokens in slot order for configureNativeFetcher — secrets, stdout only"
    let discussion = "With --json: {\"did\":…,\"tokens\":[…]}. Without: one token per line, slot order. No pool: an empty token list (what clearNativeFetcherPool hands the plugin)."

    func run(_ context: JobContext) throws {
        let store = PoolStore(database: context.database)
        let (active, live, slots) = try context.database.read { _ in
            let live = try store.live()
            return (try IdentityStore(database: context.database).active(), live, try live.map { try store.slots(of: $0.generationID) } ?? [])
        }
        let did = live?.did ?? active?.did
        let tokens = try live.map { try PoolOutput.openTokens(slots, of: $0, context) } ?? []
        context.logger.info("pool.exported", ["tokens": .int(tokens.count)])
        if context.jsonOutput {
            context.printJSON(["did": .optional(did), "tokens": .array(tokens.map(JSON.string))])
        } else {
            tokens.forEach(context.print)
        }
    }
}

struct PoolVerifyCommand: Command {
    let path = ["pool", "verify"]
    let summary = "replay the native selector over every covered day and check each token's window, signer and distinctness"

    func run(_ context: JobContext) throws {
        let store = PoolStore(database: context.database)
        let (live, active, slots) = try context.database.read { _ in
            let live = try store.live()
            return (live, try IdentityStore(database: context.database).active(), try live.map { try store.slots(of: $0.generationID) } ?? [])
        }
        guard let live else {
            throw JobError.badInput("no-pool", "there is no pool to verify; run mint-pool")
        }
        guard let active else { throw TokenPoolErrors.noIdentity }
        // Each slot opened in its own row; a row that does not open is reported on the days it serves.
        let keyring = try context.keyring()
        var damaged = Set<Int>()
        let tokens = slots.map { record -> String in
            let opened: String?
            if live.sealContext == nil {
                opened = PoolSealing.openLegacyForInspection(record, keyring: keyring)
            } else {
                opened = try? PoolSealing.open(record, of: live, keyring: keyring)
            }
            if let opened { return opened }
            damaged.insert(record.slot)
            return "unreadable-slot-\(record.slot)"
        }
        let nowSeconds = PoolCalendar.floorDivide(context.nowMilliseconds, 1000)
        var report = PoolVerifier.verify(tokens: tokens, plan: live.plan, issuer: active.did, recorded: slots.map(\.window), nowSeconds: nowSeconds)
        var problems = report.poolProblems
        if live.sealContext == nil {
            problems.append("the pool was sealed by an older version without binding each token to its slot; prefetch refuses it: run mint-pool")
        }
        let covered = report.coveredDays.map { day in
            damaged.contains(day.slot)
                ? PoolVerifier.DayResult(day: day.day, slot: day.slot, problems: ["the sealed token does not open in this slot: it was moved from another row or altered"])
                : day
        }
        if slots.map(\.slot) != Array(0..<slots.count) { problems.append("the stored slots are not 0 … count−1") }
        if live.identityID != active.id { problems.append("the pool belongs to another identity than the active one") }
        report = PoolVerifier.Report(plan: report.plan, coveredDays: covered, leakingDays: report.leakingDays,
                                     poolProblems: problems, today: report.today, uncoveredDaysChecked: report.uncoveredDaysChecked)
        context.logger.info("pool.verified", ["passed": .bool(report.passed), "days": .int(report.coveredDays.count),
                                              "failed_days": .int(report.coveredDays.filter { !$0.passed }.count)])
        PoolOutput.printVerification(report, context)
        if !report.passed {
            throw JobError.badInput("pool-verify-failed", "the pool failed verification; see the per-day report")
        }
    }
}

struct PoolClearCommand: Command {
    let path = ["pool", "clear"]
    let summary = "custody clear: delete the pool from this store (not a revocation)"

    func run(_ context: JobContext) throws {
        let store = PoolStore(database: context.database)
        let dropped = try store.retireLive()
        let purged = try store.purge(includingStaging: false, between: context.checkCancellation)
        context.logger.info("pool.cleared", ["dropped_slots": .int(dropped), "purged": .int(purged)])
        let note = "custody clear, not a revocation: Endorser cannot revoke, so a token copied off this store before the clear stays valid until its day's window closes"
        if context.jsonOutput {
            context.printJSON(["cleared": .bool(dropped > 0), "tokens_deleted": .number(dropped), "revoked": false, "note": .string(note)])
        } else {
            context.print(dropped > 0 ? "cleared the pool: \(dropped) tokens deleted from this store" : "there was no pool; nothing to clear")
            context.print(note)
        }
    }
}

/// Shared rendering for the pool commands.
enum PoolOutput {
    static func summary(_ live: PoolStore.LivePool, today: Int64) -> JSON {
        ["did": .string(live.did), "first_day": .number(live.plan.firstDay), "last_day": .number(live.plan.lastDay),
         "first_date": .string(PoolCalendar.dateString(ofDay: live.plan.firstDay)), "last_date": .string(PoolCalendar.dateString(ofDay: live.plan.lastDay)),
         "size": .number(live.plan.size), "slack_seconds": .number(live.slackSeconds),
         "minted_at": .string(Date(unixMilliseconds: live.issuedAt).rfc3339), "today_slot": .optional(live.plan.slot(forDay: today))]
    }

    static func json(_ fetch: FetchLog.Entry?) -> JSON {
        guard let fetch else { return .null }
        return ["fetched_at": .string(Date(unixMilliseconds: fetch.fetchedAt).rfc3339), "date": .string(PoolCalendar.dateString(ofDay: fetch.day)),
                "slot": .optional(fetch.slot), "outcome": .string(fetch.outcome), "http_status": .optional(fetch.httpStatus),
                "rows": .optional(fetch.rows), "hit_limit": fetch.hitLimit.map(JSON.bool) ?? .null]
    }

    static func printLastFetch(_ fetch: FetchLog.Entry?, _ context: JobContext) {
        guard let fetch else { context.print("last background fetch: never"); return }
        var line = "last background fetch: \(fetch.outcome) at \(Date(unixMilliseconds: fetch.fetchedAt).rfc3339)"
        if let status = fetch.httpStatus { line += ", HTTP \(status)" }
        if let rows = fetch.rows { line += ", \(rows) rows" }
        if let hit = fetch.hitLimit { line += hit ? ", hit the limit" : "" }
        context.print(line)
    }

    /// Opens every slot's sealed token in its own row (`PoolSealing`); a legacy or damaged pool is refused whole.
    static func openTokens(_ slots: [PoolStore.SlotRecord], of live: PoolStore.LivePool, _ context: JobContext) throws -> [String] {
        let keyring = try context.keyring()
        do {
            return try slots.map { record throws(PoolSealing.Failure) in try PoolSealing.open(record, of: live, keyring: keyring) }
        } catch .legacy {
            throw TokenPoolErrors.poolLegacy
        } catch .damaged {
            throw TokenPoolErrors.poolDamaged
        }
    }

    static func printVerification(_ report: PoolVerifier.Report, _ context: JobContext) {
        let failed = report.coveredDays.filter { !$0.passed }
        if context.jsonOutput {
            let days: [JSON] = report.coveredDays.map { day in
                ["day": .number(day.day), "date": .string(PoolCalendar.dateString(ofDay: day.day)), "slot": .number(day.slot),
                 "ok": .bool(day.passed), "problems": .array(day.problems.map(JSON.string))]
            }
            let leaking: [JSON] = report.leakingDays.map { day in
                ["day": .number(day.day), "date": .string(PoolCalendar.dateString(ofDay: day.day)), "slot": .number(day.slot), "problems": .array(day.problems.map(JSON.string))]
            }
            context.printJSON(["passed": .bool(report.passed), "first_date": .string(PoolCalendar.dateString(ofDay: report.plan.firstDay)),
                               "last_date": .string(PoolCalendar.dateString(ofDay: report.plan.lastDay)), "days_checked": .number(report.coveredDays.count),
                               "uncovered_days_checked": .number(report.uncoveredDaysChecked), "pool_problems": .array(report.poolProblems.map(JSON.string)),
                               "today": ["date": .string(PoolCalendar.dateString(ofDay: report.today.day)), "slot": .optional(report.today.slot),
                                         "accepted_now": report.today.accepted.map(JSON.bool) ?? .null],
                               "days": .array(days), "leaking_days": .array(leaking)])
            return
        }
        for problem in report.poolProblems { context.print("pool: \(problem)") }
        for day in failed {
            context.print("\(PoolCalendar.dateString(ofDay: day.day)) slot \(day.slot): FAIL: \(day.problems.joined(separator: "; "))")
        }
        for day in report.leakingDays {
            context.print("\(PoolCalendar.dateString(ofDay: day.day)) slot \(day.slot): FAIL: \(day.problems.joined(separator: "; "))")
        }
        switch report.today.accepted {
        case .some(true): context.print("today: slot \(report.today.slot!) is accepted now")
        case .some(false): context.print("today: FAIL: the selected slot \(report.today.slot!) would be refused now")
        case .none: context.print("today (\(PoolCalendar.dateString(ofDay: report.today.day))) is outside the pool: no credential")
        }
        let verdict = report.passed ? "pool verified" : "pool FAILED verification"
        context.print("\(verdict): \(report.coveredDays.count - failed.count)/\(report.coveredDays.count) days from \(PoolCalendar.dateString(ofDay: report.plan.firstDay)) to \(PoolCalendar.dateString(ofDay: report.plan.lastDay)) pass; \(report.uncoveredDaysChecked) uncovered days checked, \(report.leakingDays.count) leak")
    }
}
