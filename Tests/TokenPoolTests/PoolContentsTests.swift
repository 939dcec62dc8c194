import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import TokenPool

/// What a minted pool holds and what may be shown of it.
@Suite(.timeLimit(.minutes(15))) struct PoolContentsTests {
    static let now = instant("2027-10-05T13:45:00Z")

    @Test func everyTokenInAPoolIsDistinctAndOneDayWide() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let tokens = try harness.exportedTokens()
        #expect(tokens.count == 100)
        #expect(Set(tokens).count == 100)
        // Distinct signatures too, not only distinct payloads.
        #expect(Set(tokens.map { $0.split(separator: ".")[2] }).count == 100)
        for token in tokens {
            let claims = try DayTokenInspection(token: token, expectedIssuer: PoolHarness.didA)
            #expect(claims.expires - claims.notBefore == 86_400 + 600)
            #expect(claims.issuedAt == Int64(Self.now.timeIntervalSince1970))
        }
        // The store enforces it as well: a blind index per token, unique within a pool.
        let db = try harness.database()
        let indexes: Int? = try db.scalar("SELECT count(DISTINCT token_index) FROM token_pool_slots")
        #expect(indexes == 100)
    }

    @Test func showAndVerifyNeverPrintATokenButExportDoes() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "9")
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let tokens = try harness.exportedTokens()
        var shown = ""
        for json in [false, true] {
            shown += try harness.command(["pool", "show"], now: Self.now, json: json).stdout
            shown += try harness.command(["pool", "verify"], now: Self.now, json: json).stdout
            shown += try harness.command(["identity", "list"], now: Self.now, json: json).stdout
        }
        for token in tokens {
            #expect(!shown.contains(String(token.split(separator: ".")[2])))
        }
        #expect(!shown.contains("eyJ"))
        #expect(!harness.job.logs.joined().contains("eyJ"))
        #expect(!harness.job.logs.joined().contains(PoolHarness.didA))
        let show = try harness.command(["pool", "show"], now: Self.now, json: true).json()
        let slots = try #require(show["slots"] as? [[String: Any]])
        #expect(slots.count == 9)
        #expect(slots.filter { $0["live_today"] as? Bool == true }.count == 1)
        // Human export: one token per line, slot order.
        #expect(try harness.command(["pool", "export"]).stdout == tokens.joined(separator: "\n") + "\n")
    }

    @Test func anIdentitySwitchDuringAPassInstallsNothing() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.importKey(PoolHarness.keyB)
        try harness.setting("pool.size", "4")
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let before = try harness.exportedTokens()

        // A pass for A writes its first batch; then the app switches to B; then the pass tries to go live.
        let db = try harness.database()
        let store = PoolStore(database: db)
        let identityA = try #require(try IdentityStore(database: db).identity(did: PoolHarness.didA))
        let plan = PoolPlan(firstDay: 21_000, size: 4)
        let staging = PoolStore.Staging(identityID: identityA.id, plan: plan, slackSeconds: 300, issuedAt: 0, now: 0, sealContext: try PoolSealing.newContext())
        let keyring = try harness.keyring()
        let minter = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(PoolHarness.keyA))))
        let slots = try plan.days.map { day -> PoolStore.NewSlot in
            let token = Array(try minter.token(for: DayWindow(day: day, slackSeconds: 300), issuedAt: 0).utf8)
            return PoolStore.NewSlot(slot: Int(day % 4), window: DayWindow(day: day, slackSeconds: 300),
                                     sealedToken: try keyring.seal(token, purpose: PoolStore.tokenPurpose),
                                     tokenIndex: keyring.blindIndex(token, purpose: PoolStore.tokenPurpose))
        }
        let first = try store.write(Array(slots[0..<2]), into: nil, staging: staging, promote: false)
        #expect(try harness.command(["identity", "use", PoolHarness.didB]).exitCode == .success)
        #expect(throws: PoolStore.PromotionFailure.identityChanged) {
            try store.write(Array(slots[2..<4]), into: first.generationID, staging: staging, promote: true)
        }
        // B's switch dropped A's pool, and A's half-written pool never went live.
        #expect(try harness.exportedTokens().isEmpty)
        #expect(!before.isEmpty)
        let live: Int? = try db.scalar("SELECT count(*) FROM token_pool_generations WHERE state = 'live'")
        #expect(live == 0)
        // The next pass purges the abandoned staging rows and mints for B.
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        let rows: Int? = try db.scalar("SELECT count(*) FROM token_pool_slots")
        #expect(rows == 4)
        #expect(try harness.exportedTokens().allSatisfy { (try? DayTokenInspection(token: $0, expectedIssuer: PoolHarness.didB)) != nil })
    }

    @Test func aTamperedPoolOrAnotherStoreKeyIsAClearErrorAndPrintsNothing() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "3")
        try harness.setting("prefetch.after-id", PoolHarness.afterID)
        #expect(try harness.pass("mint-pool", now: Self.now).exitCode == .success)
        // One altered ciphertext byte: AES-GCM refuses it.
        let db = try harness.database()
        try db.write { db in
            let sealed: [UInt8] = try db.scalar("SELECT sealed_token FROM token_pool_slots WHERE slot = 1")!
            var altered = sealed
            altered[20] ^= 0x01
            _ = try db.execute("UPDATE token_pool_slots SET sealed_token = ? WHERE slot = 1", [altered])
        }
        let export = try harness.command(["pool", "export"])
        #expect(export.exitCode == .dataError)
        #expect(export.error?.category == "pool-unreadable")
        #expect(export.stdout.isEmpty)
        // verify reports the altered slot on the day it serves (and fails) rather than refusing the whole pool.
        let verify = try harness.command(["pool", "verify"], now: Self.now)
        #expect(verify.error?.category == "pool-verify-failed")
        #expect(verify.stdout.contains("slot 1: FAIL: the sealed token does not open in this slot"))

        // Another store key altogether: the runner's key check refuses before anything is opened.
        let keyFile = harness.job.storePath + ".key"
        try Hex.encode(try SecureRandom.bytes(count: 32)).write(toFile: keyFile, atomically: true, encoding: .utf8)
        let mint = try harness.pass("mint-pool", now: Self.now)
        #expect(mint.exitCode == .configuration)
        #expect(try harness.command(["identity", "export"]).stdout.isEmpty)
    }
}

extension PoolContentsTests {
    @Test func aSlackOfMoreThanAQuarterDayIsRefusedAndPoolVerifyFlagsATokenValidForTwoDays() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        #expect(try harness.command(["settings", "set", "pool.slack-seconds", "43199"]).exitCode == .usage)
        #expect(try harness.command(["settings", "set", "pool.slack-seconds", "21600"]).exitCode == .usage)
        #expect(try harness.command(["settings", "set", "pool.slack-seconds", "21599"]).exitCode == .success)

        // A token padded by 43,199 s on each end (valid for 48 h), as an older version could mint, fails verify.
        let minter = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(PoolHarness.keyA))))
        let day: Int64 = 20_600
        let wide = DayWindow(day: day, notBefore: PoolCalendar.opening(of: day) - 43_199, expires: PoolCalendar.closing(of: day) + 43_199)
        let token = try minter.sign(headerJSON: DayTokenClaims.headerJSON, payloadJSON: DayTokenClaims.payloadJSON(issuedAt: day * 86_400, window: wide, issuer: PoolHarness.didA))
        let report = PoolVerifier.verify(tokens: [token], plan: PoolPlan(firstDay: day, size: 1), issuer: PoolHarness.didA, recorded: nil, nowSeconds: day * 86_400)
        #expect(!report.passed)
        #expect(report.coveredDays.first?.problems == ["window is longer than a day plus the maximum slack on each end"])
    }

    @Test func aSettingWrittenOutOfRangeBehindTheCommandsIsAConfigurationError() throws {
        let harness = PoolHarness()
        try harness.importKey(PoolHarness.keyA)
        let db = try harness.database()
        try db.write { db in
            _ = try db.execute("INSERT INTO settings (key, value, updated_at) VALUES ('pool.slack-seconds', '90000', 0)", [])
        }
        let result = try harness.pass("mint-pool", now: Self.now)
        #expect(result.exitCode == .configuration)
        #expect(try harness.exportedTokens().isEmpty)
    }
}
