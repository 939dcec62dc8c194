import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import TokenPool

/// `job pool verify`: the native selector replayed over every covered day, and its failure reports.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PoolVerifyTests {
    @Test func aFreshPoolVerifiesAndIsAcceptedAtEveryMidnightPlusOrMinusOneSecond() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        let harness = PoolHarness(environment: ["ENDORSER_URL": endorser.baseURL])
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "8")
        try harness.setting("prefetch.after-id", PoolHarness.afterID)
        try harness.setting("prefetch.plan-ids", "plan-a,plan-b")
        let minted = instant("2028-02-26T17:30:00Z")
        #expect(try harness.pass("mint-pool", now: minted).exitCode == .success)
        let firstDay = PoolCalendar.epochDay(unixSeconds: Int64(minted.timeIntervalSince1970))

        // Every midnight from the pool's first to the one after its last day, at −1 s, 0 and +1 s.
        for day in firstDay...(firstDay + 8) {
            for delta in [Int64(-1), 0, 1] {
                let now = day * 86_400 + delta
                let verify = try harness.command(["pool", "verify"], now: instant(unix: now))
                #expect(verify.exitCode == .success, "verify at \(now): \(verify.stdout)")
                try endorser.configure(now: now)
                let prefetch = try harness.pass("prefetch", now: instant(unix: now))
                let today = PoolCalendar.epochDay(unixSeconds: now)
                if today >= firstDay && today < firstDay + 8 {
                    #expect(prefetch.exitCode == .success, "prefetch at \(now): \(String(describing: prefetch.error))")
                    #expect(try prefetch.json()["outcome"] as? String == "completed")
                } else {
                    // Before the first or after the last covered day: no credential, no request.
                    #expect(prefetch.exitCode == .configuration)
                    #expect(prefetch.error?.category == "no-credential")
                }
            }
        }
        let requests = try endorser.requests()
        #expect(!requests.isEmpty)
        #expect(requests.allSatisfy { $0["verdict"] as? String == "ok" })
        // 9 midnights × 3 instants, less the one before the first midnight and the two after the last: 24.
        #expect(requests.count == 9 * 3 - 1 - 2)
    }

    @Test func verifyReportsEachDayWhoseSlotHoldsTheWrongToken() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "6")
        let now = instant("2027-06-10T09:00:00Z")
        #expect(try harness.pass("mint-pool", now: now).exitCode == .success)
        // Swap the sealed tokens of slots 1 and 2 behind the store's back.
        let db = try harness.database()
        try db.write { db in
            let one: [UInt8] = try db.scalar("SELECT sealed_token FROM token_pool_slots s JOIN token_pool_generations g ON g.id = s.generation_id WHERE g.state = 'live' AND slot = 1")!
            let two: [UInt8] = try db.scalar("SELECT sealed_token FROM token_pool_slots s JOIN token_pool_generations g ON g.id = s.generation_id WHERE g.state = 'live' AND slot = 2")!
            _ = try db.execute("UPDATE token_pool_slots SET sealed_token = ? WHERE slot = 1", [two])
            _ = try db.execute("UPDATE token_pool_slots SET sealed_token = ? WHERE slot = 2", [one])
        }
        let verify = try harness.command(["pool", "verify"], now: now)
        #expect(verify.exitCode == .dataError)
        #expect(verify.error?.category == "pool-verify-failed")
        let failing = verify.stdout.split(separator: "\n").filter { $0.contains(": FAIL: ") }
        #expect(failing.count == 2, "\(verify.stdout)")
        // Day 20983 (2027-06-14) is read from slot 1, which now holds the 15th's token, and the reverse: each token is
        // sealed bound to its own slot, so a moved one does not open in the other row.
        #expect(verify.stdout.contains("2027-06-14 slot 1: FAIL: the sealed token does not open in this slot: it was moved from another row or altered"))
        #expect(verify.stdout.contains("2027-06-15 slot 2: FAIL: the sealed token does not open in this slot: it was moved from another row or altered"))
        #expect(verify.stdout.contains("pool FAILED verification: 4/6 days"))

        let json = try harness.command(["pool", "verify"], now: now, json: true).json()
        #expect(json["passed"] as? Bool == false)
        let days = try #require(json["days"] as? [[String: Any]])
        #expect(days.count == 6)
        #expect(days.filter { $0["ok"] as? Bool == false }.count == 2)
    }

    @Test func verifyRefusesTokensFromAnotherKeyDuplicatesAndWideWindows() throws {
        let a = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(PoolHarness.keyA))))
        let b = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(PoolHarness.keyB))))
        let plan = PoolPlan(firstDay: 20_500, size: 4)
        let iat: Int64 = 20_500 * 86_400 + 100
        var tokens = [String](repeating: "", count: 4)
        for day in plan.days { tokens[Int(day % 4)] = try a.token(for: DayWindow(day: day, slackSeconds: 300), issuedAt: iat) }
        let now = iat
        #expect(PoolVerifier.verify(tokens: tokens, plan: plan, issuer: a.issuer, recorded: nil, nowSeconds: now).passed)

        // A token signed by key B but claiming A as issuer: the signature does not recover to A's address.
        var forged = tokens
        let slot = Int(20_501 % 4)
        let payload = DayTokenClaims.payloadJSON(issuedAt: iat, window: DayWindow(day: 20_501, slackSeconds: 300), issuer: a.issuer)
        forged[slot] = try b.sign(headerJSON: DayTokenClaims.headerJSON, payloadJSON: payload)
        let forgedReport = PoolVerifier.verify(tokens: forged, plan: plan, issuer: a.issuer, recorded: nil, nowSeconds: now)
        #expect(!forgedReport.passed)
        #expect(forgedReport.coveredDays.first { $0.day == 20_501 }?.problems == ["signature does not recover to the issuer's address"])

        // The whole pool checked against another identity.
        #expect(PoolVerifier.verify(tokens: tokens, plan: plan, issuer: b.issuer, recorded: nil, nowSeconds: now).coveredDays.allSatisfy { !$0.passed })

        // One token repeated in two slots.
        var duplicated = tokens
        duplicated[Int(20_502 % 4)] = tokens[Int(20_501 % 4)]
        let duplicateReport = PoolVerifier.verify(tokens: duplicated, plan: plan, issuer: a.issuer, recorded: nil, nowSeconds: now)
        #expect(duplicateReport.poolProblems.contains { $0.contains("holds the same token as slot") })

        // A token whose window spans several days grants more than its day and leaks beyond the pool.
        var wide = tokens
        let wideWindow = DayWindow(day: 20_503, notBefore: 20_500 * 86_400, expires: 20_510 * 86_400)
        wide[Int(20_503 % 4)] = try a.sign(headerJSON: DayTokenClaims.headerJSON,
                                            payloadJSON: DayTokenClaims.payloadJSON(issuedAt: iat, window: wideWindow, issuer: a.issuer))
        let wideReport = PoolVerifier.verify(tokens: wide, plan: plan, issuer: a.issuer, recorded: nil, nowSeconds: now)
        #expect(wideReport.coveredDays.first { $0.day == 20_503 }?.problems == ["window grants more than its own day"])
        #expect(wideReport.leakingDays.map(\.day).contains(20_507))

        // A payload with an aud (which Endorser would refuse) is not a pool token.
        var withAudience = tokens
        withAudience[0] = try a.sign(headerJSON: DayTokenClaims.headerJSON,
                                     payloadJSON: Array(#"{"iat":1,"exp":1771344300,"nbf":1771257300,"aud":"x","iss":"\#(a.issuer)"}"#.utf8))
        let audReport = PoolVerifier.verify(tokens: withAudience, plan: plan, issuer: a.issuer, recorded: nil, nowSeconds: now)
        #expect(audReport.coveredDays.first { $0.slot == 0 }?.problems == [DayTokenInspection.Failure.wrongClaims.description])
    }

    @Test func verifyWithoutAPoolFailsClearly() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        let verify = try harness.command(["pool", "verify"])
        #expect(verify.exitCode == .dataError)
        #expect(verify.error?.category == "no-pool")
    }
}
