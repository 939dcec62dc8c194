import Cryptography
import Foundation
import Store
import Testing
import TestSupport
@testable import TokenPool

/// `prefetch` against the Endorser stand-in, which verifies every Bearer token as Endorser's did-jwt does.
@Suite(.tags(.process), .timeLimit(.minutes(15))) struct PrefetchTests {
    static let now = instant("2027-09-14T06:30:00Z")
    static var nowSeconds: Int64 { Int64(now.timeIntervalSince1970) }

    /// A harness with identity A, a 10-day pool minted at `now`, and the prefetch settings.
    static func mintedHarness(_ endorserURL: String?, planIDs: String = "https://endorser.ch/entity/01PLANA,https://endorser.ch/entity/01PLANB") throws -> PoolHarness {
        let harness = PoolHarness(environment: endorserURL.map { ["ENDORSER_URL": $0] } ?? [:])
        try harness.importKey(PoolHarness.keyA)
        try harness.setting("pool.size", "10")
        try harness.setting("prefetch.after-id", PoolHarness.afterID)
        if !planIDs.isEmpty { try harness.setting("prefetch.plan-ids", planIDs) }
        let mint = try harness.pass("mint-pool", now: now)
        guard mint.exitCode == .success else { throw TestFailure("mint failed: \(String(describing: mint.error))") }
        return harness
    }

    @Test func prefetchPresentsTodaysTokenAndRecordsStatusRowsAndHitLimit() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds)
        let harness = try Self.mintedHarness(endorser.baseURL)

        let result = try harness.pass("prefetch", now: Self.now)
        #expect(result.exitCode == .success, "\(String(describing: result.error))")
        let json = try result.json()
        let counts = try #require(json["counts"] as? [String: Any])
        #expect(counts["http_status"] as? Int == 200)
        #expect(counts["rows"] as? Int == 2)
        #expect(counts["hit_limit"] as? Int == 0)
        let details = try #require(json["details"] as? [String: Any])
        #expect(details["slot"] as? Int == Int(PoolCalendar.epochDay(unixSeconds: Self.nowSeconds) % 10))

        let requests = try endorser.requests()
        #expect(requests.count == 1)
        let request = try #require(requests.first)
        #expect(request["verdict"] as? String == "ok")
        #expect(request["iss"] as? String == PoolHarness.didA)
        #expect(request["content_type"] as? String == "application/json")
        let body = try #require(request["body"] as? [String: Any])
        #expect(body["planIds"] as? [String] == ["https://endorser.ch/entity/01PLANA", "https://endorser.ch/entity/01PLANB"])
        #expect(body["afterId"] as? String == PoolHarness.afterID)
        #expect(Set(body.keys) == ["planIds", "afterId"])
        // The after-id moved to the newest row returned: the next pass asks a new question.
        #expect(try harness.command(["settings", "get", "prefetch.after-id"]).stdout.contains("01HZX400000000000000000002"))

        // Recorded for `pool show` and `job status`.
        let show = try harness.command(["pool", "show"], now: Self.now, json: true).json()
        let last = try #require(show["last_fetch"] as? [String: Any])
        #expect(last["outcome"] as? String == "ok")
        #expect(last["http_status"] as? Int == 200)
        #expect(last["rows"] as? Int == 2)
        #expect(last["hit_limit"] as? Bool == false)
        let db = try harness.database()
        let ledgerCounts: String? = try db.scalar("SELECT counts FROM job_runs WHERE job = 'prefetch' ORDER BY id DESC LIMIT 1")
        #expect(ledgerCounts == #"{"http_status":200,"rows":2,"hit_limit":0,"kept":2,"paging":0}"#)
    }

    @Test func aFullAnswerIsRecordedAsHittingTheLimit() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds, rows: 75)
        let harness = try Self.mintedHarness(endorser.baseURL)
        let result = try harness.pass("prefetch", now: Self.now)
        let counts = try #require(try result.json()["counts"] as? [String: Any])
        #expect(counts["rows"] as? Int == 50)
        #expect(counts["hit_limit"] as? Int == 1)
    }

    @Test func anEmptyPoolOrADayPastThePoolMakesNoRequestAndFailsAsNoCredentialWithExit78() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds)

        // No pool at all (identity but never minted).
        let empty = PoolHarness(environment: ["ENDORSER_URL": endorser.baseURL])
        try empty.importKey(PoolHarness.keyA)
        try empty.setting("prefetch.after-id", PoolHarness.afterID)
        let skipped = try empty.pass("prefetch", now: Self.now)
        #expect(skipped.exitCode == .configuration)
        #expect(skipped.error?.category == "no-credential")

        // The day after the last covered day: epochDay % 10 indexes a slot, yet there is no credential.
        let harness = try Self.mintedHarness(endorser.baseURL)
        let firstDay = PoolCalendar.epochDay(unixSeconds: Self.nowSeconds)
        for day in [firstDay + 10, firstDay + 11, firstDay - 1] {
            let at = instant(unix: day * 86_400 + 600)
            try endorser.configure(now: day * 86_400 + 600)
            let past = try harness.pass("prefetch", now: at)
            #expect(past.error?.category == "no-credential")
        }
        #expect(try endorser.requests().isEmpty)
        let status = try harness.database().queryOne("SELECT outcome, reason FROM job_runs WHERE job = 'prefetch' ORDER BY id DESC LIMIT 1")
        #expect(try status?.get(0, as: String.self) == "failed")
        #expect(try status?.get(1, as: String.self) == "no-credential")
        let show = try harness.command(["pool", "show"], now: Self.now, json: true).json()
        #expect((show["last_fetch"] as? [String: Any])?["outcome"] as? String == "no-credential")
    }

    @Test func aTokenEndorserRefusesIsACredentialFailureWithExit65() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        let harness = try Self.mintedHarness(endorser.baseURL)
        // Endorser's clock is two days ahead of the device: today's token has expired there.
        try endorser.configure(now: Self.nowSeconds + 2 * 86_400)
        let result = try harness.pass("prefetch", now: Self.now)
        #expect(result.exitCode == .dataError)
        #expect(result.error?.category == "credential-rejected")
        #expect((try endorser.requests().first?["verdict"] as? String)?.contains("JWT has expired") == true)
        let row = try harness.database().queryOne("SELECT outcome, http_status FROM token_pool_fetches ORDER BY id DESC LIMIT 1")
        #expect(try row?.get(0, as: String.self) == "credential-rejected")
        #expect(try row?.get(1, as: Int.self) == 400)
        let ledger = try harness.database().queryOne("SELECT outcome, reason, exit_code, counts FROM job_runs WHERE job = 'prefetch' ORDER BY id DESC LIMIT 1")
        #expect(try ledger?.get(3, as: String.self) == #"{"http_status":400}"#)
        #expect(try ledger?.get(0, as: String.self) == "failed")
        #expect(try ledger?.get(1, as: String.self) == "credential-rejected")
        #expect(try ledger?.get(2, as: Int.self) == 65)
    }

    @Test func serverErrorsAndAnUnreachableEndorserAreTransient() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds, status: 503)
        let harness = try Self.mintedHarness(endorser.baseURL)
        let failed = try harness.pass("prefetch", now: Self.now)
        #expect(failed.exitCode == .temporaryFailure)
        #expect(failed.error?.category == "endorser-unavailable")

        try endorser.configure(now: Self.nowSeconds, status: 429)
        #expect(try harness.pass("prefetch", now: Self.now).exitCode == .temporaryFailure)

        // A refusal that is not about the credential.
        try endorser.configure(now: Self.nowSeconds, status: 404)
        let refused = try harness.pass("prefetch", now: Self.now)
        #expect(refused.exitCode == .dataError)
        #expect(refused.error?.category == "endorser-refused")

        // Nothing listens on the port any more.
        endorser.stop()
        let unreachable = try harness.pass("prefetch", now: Self.now)
        #expect(unreachable.exitCode == .temporaryFailure)
        let outcomes = try harness.database().query("SELECT outcome FROM token_pool_fetches ORDER BY id").map { try $0.get(0, as: String.self) }
        #expect(outcomes == ["transient", "transient", "refused", "transient"])
    }

    @Test func prefetchKeepsTheRowsSealedPagesOnHitLimitInLaterPassesAndMovesTheAfterID() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds, rows: 120)
        let harness = try Self.mintedHarness(endorser.baseURL)
        func afterID() throws -> String { try harness.command(["settings", "get", "prefetch.after-id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

        // 120 changes: three passes of at most 50, the later ones asking for what lies before the oldest seen.
        var paging: [Int] = []
        for hour in 0..<3 {
            let pass = try harness.pass("prefetch", now: Self.now.addingTimeInterval(Double(hour * 3600)))
            #expect(pass.exitCode == .success, "\(String(describing: pass.error))")
            paging.append(try #require(try pass.json()["counts"] as? [String: Any])["paging"] as? Int ?? -1)
            if hour < 2 { #expect(try afterID() == PoolHarness.afterID, "the after-id stays until the round has read all") }
        }
        #expect(paging == [1, 1, 0])
        let bodies = try endorser.requests().compactMap { $0["body"] as? [String: Any] }
        #expect(bodies.map { $0["afterId"] as? String } == Array(repeating: PoolHarness.afterID, count: 3))
        #expect(bodies.map { $0["beforeId"] as? String } == [nil, "01HZX400000000000000000071", "01HZX400000000000000000021"])
        #expect(try afterID() == "01HZX400000000000000000120")

        let list = try JSONSerialization.jsonObject(with: Data(try harness.command(["activity", "list"], json: true).stdout.utf8)) as? [[String: Any]]
        #expect(list?.count == 120)
        #expect(list?.first?["jwt_id"] as? String == "01HZX400000000000000000120")
        #expect(list?.first?["name"] as? String == "Plan change 120")
        #expect(list?.first?["change"] as? String == "updated")
        #expect(list?.last?["jwt_id"] as? String == "01HZX400000000000000000001")
        #expect(list?.last?["change"] as? String == "new")
        #expect((list?.first?["row"] as? [String: Any])?["plan"] != nil)
        let human = try harness.command(["activity", "list"]).stdout
        #expect(human.contains("Plan change 7"))

        // Sealed: no plan name, handle or jwtId in the store in clear.
        let file = try String(decoding: Data(contentsOf: URL(fileURLWithPath: harness.job.storePath)), as: UTF8.self)
        #expect(!file.contains("Plan change") && !file.contains("01HZX400000000000000000007"))

        // The next question starts after the newest row: nothing new, nothing duplicated; then five new changes.
        try endorser.configure(now: Self.nowSeconds, rows: 120, reset: true)
        let quiet = try harness.pass("prefetch", now: Self.now.addingTimeInterval(3 * 3600))
        #expect(try #require(try quiet.json()["counts"] as? [String: Any])["rows"] as? Int == 0)
        try endorser.configure(now: Self.nowSeconds, rows: 125)
        let fresh = try harness.pass("prefetch", now: Self.now.addingTimeInterval(4 * 3600))
        #expect(try #require(try fresh.json()["counts"] as? [String: Any])["kept"] as? Int == 5)
        #expect(try endorser.requests().compactMap { ($0["body"] as? [String: Any])?["afterId"] as? String } == Array(repeating: "01HZX400000000000000000120", count: 2))
        #expect(try afterID() == "01HZX400000000000000000125")
        let count: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_activity")
        #expect(count == 125)
    }

    @Test func activityListWithNothingKeptSaysSo() throws {
        let harness = PoolHarness()
        #expect(try harness.command(["activity", "list"]).stdout.contains("no new activity kept"))
        #expect(try harness.command(["activity", "list"], json: true).stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }

    @Test func aRetryAfterOn429Or503IsHonouredAcrossPassesAndNothingIsSentBeforeIt() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds, status: 503, retryAfter: "3600")
        let harness = try Self.mintedHarness(endorser.baseURL)
        let first = try harness.pass("prefetch", now: Self.now)
        #expect(first.exitCode == .temporaryFailure)
        #expect(first.error?.category == "endorser-unavailable")
        #expect(try endorser.requests().count == 1)

        // Three hourly passes inside the hour back-off send nothing.
        try endorser.configure(now: Self.nowSeconds, reset: true)
        for minutes in [1, 30, 59] {
            let pass = try harness.pass("prefetch", now: Self.now.addingTimeInterval(Double(minutes * 60)))
            #expect(pass.exitCode == .success)
            #expect(try pass.json()["reason"] as? String == "retry-after")
            let details = try pass.json()["details"] as? [String: Any]
            #expect((details?["retry_after"] as? String)?.hasPrefix("2027-09-14T07:30:00") == true)
        }
        #expect(try endorser.requests().isEmpty)
        // Once it has passed, the next pass asks again.
        let after = try harness.pass("prefetch", now: Self.now.addingTimeInterval(3600))
        #expect(after.exitCode == .success, "\(String(describing: after.error))")
        #expect(try endorser.requests().count == 1)

        // 429 with an HTTP-date.
        try endorser.configure(now: Self.nowSeconds + 7200, status: 429, retryAfter: "Tue, 14 Sep 2027 10:00:00 GMT", reset: true)
        #expect(try harness.pass("prefetch", now: Self.now.addingTimeInterval(7200)).exitCode == .temporaryFailure)
        let held = try harness.pass("prefetch", now: Self.now.addingTimeInterval(7200 + 3600))
        #expect(try held.json()["reason"] as? String == "retry-after")
        #expect(try endorser.requests().count == 1)
        // Without Retry-After a 503 sets no back-off: the next pass asks again.
        try endorser.configure(now: Self.nowSeconds + 14_400, status: 503, reset: true)
        #expect(try harness.pass("prefetch", now: Self.now.addingTimeInterval(14_400)).exitCode == .temporaryFailure)
        #expect(try harness.pass("prefetch", now: Self.now.addingTimeInterval(14_460)).exitCode == .temporaryFailure)
        #expect(try endorser.requests().count == 2)
    }

    @Test func plainHTTPToANonLoopbackHostIsRefusedBeforeTheBearerGoesOut() throws {
        for url in ["http://endorser.example", "http://10.0.0.5:3000", "HTTP://128.0.0.1"] {
            let harness = try Self.mintedHarness(url)
            let result = try harness.pass("prefetch", now: Self.now)
            #expect(result.exitCode == .configuration, "\(url)")
            #expect(result.error?.category == "endorser-url-insecure", "\(url)")
            let fetches: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_fetches")
            #expect(fetches == 0)
        }
        #expect(EndorserURL.problem("http://localhost:3000") == nil)
        #expect(EndorserURL.problem("http://127.0.0.2:3000") == nil)
        #expect(EndorserURL.problem("http://[::1]:3000") == nil)
        #expect(EndorserURL.problem("https://endorser.example") == nil)
    }

    @Test func signedOutOrWithAPasskeyIdentityPrefetchSkipsWithoutARequest() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds)
        let harness = try Self.mintedHarness(endorser.baseURL)
        #expect(try harness.command(["identity", "use", "--none"]).exitCode == .success)
        let out = try harness.pass("prefetch", now: Self.now)
        #expect(out.exitCode == .success)
        #expect(try out.json()["reason"] as? String == "no-identity")
        #expect(try harness.command(["identity", "add-peer", "did:peer:0z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"]).exitCode == .success)
        #expect(try harness.command(["identity", "use", "did:peer:0z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"]).exitCode == .success)
        #expect(try harness.pass("prefetch", now: Self.now).json()["reason"] as? String == "unsupported-identity")
        #expect(try endorser.requests().isEmpty)
    }

    @Test func missingOrInvalidConfigurationIsExit78() throws {
        let missing = try Self.mintedHarness(nil)
        let noURL = try missing.pass("prefetch", now: Self.now)
        #expect(noURL.exitCode == .configuration)
        #expect(noURL.error?.category == "endorser-url-missing")

        let invalid = try Self.mintedHarness("ftp://example.invalid")
        #expect(try invalid.pass("prefetch", now: Self.now).error?.category == "endorser-url-invalid")

        let noAfterID = PoolHarness(environment: ["ENDORSER_URL": "http://127.0.0.1:9"])
        try noAfterID.importKey(PoolHarness.keyA)
        let result = try noAfterID.pass("prefetch", now: Self.now)
        #expect(result.exitCode == .configuration)
        #expect(result.error?.category == "after-id-missing")
        // Settings refuse malformed values outright.
        #expect(try noAfterID.command(["settings", "set", "prefetch.after-id", "not-a-ulid"]).exitCode == .usage)
        #expect(try noAfterID.command(["settings", "set", "prefetch.plan-ids", "a, b"]).exitCode == .usage)
        #expect(try noAfterID.command(["settings", "set", "pool.size", "1"]).exitCode == .usage)
    }

    @Test func dryRunShowsTheSlotAndWindowAndSendsNothing() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        try endorser.configure(now: Self.nowSeconds)
        let harness = try Self.mintedHarness(endorser.baseURL)
        let result = try harness.pass("prefetch", ["--dry-run"], now: Self.now, json: false)
        #expect(result.exitCode == .success)
        let day = PoolCalendar.epochDay(unixSeconds: Self.nowSeconds)
        #expect(result.stdout.contains("slot: \(day % 10)"))
        #expect(result.stdout.contains("nbf: 2027-09-13T23:55:00.000Z"))
        #expect(result.stdout.contains("exp: 2027-09-15T00:05:00.000Z"))
        #expect(try endorser.requests().isEmpty)
        let fetches: Int? = try harness.database().scalar("SELECT count(*) FROM token_pool_fetches")
        #expect(fetches == 0)
    }

    @Test func theStandInRefusesTokensOutsideTheirDayFromAnotherKeyOrWithAnAudience() throws {
        let endorser = try EndorserStandIn()
        defer { endorser.stop() }
        let a = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(PoolHarness.keyA))))
        let b = DayTokenMinter(key: try Secp256k1PrivateKey(rawRepresentation: SecretBytes(try Hex.decode(PoolHarness.keyB))))
        let day: Int64 = 21_000
        let token = try a.token(for: DayWindow(day: day, slackSeconds: 300), issuedAt: day * 86_400 - 3_600)

        // Inside its window (with slack and Endorser's 300 s skew) it is accepted...
        for now in [day * 86_400 - 600, day * 86_400, day * 86_400 + 43_200, (day + 1) * 86_400 + 599] {
            try endorser.configure(now: now)
            #expect(try endorser.present(token).status == 200, "at \(now)")
        }
        // ...and outside it refused as Endorser refuses: JWT_VERIFY_FAILED.
        for now in [day * 86_400 - 601, (day + 1) * 86_400 + 600, (day + 2) * 86_400] {
            try endorser.configure(now: now)
            let answer = try endorser.present(token)
            #expect(answer.status == 400 && answer.body.contains("JWT_VERIFY_FAILED"), "at \(now)")
        }
        try endorser.configure(now: day * 86_400 + 100)
        // Signed by B while claiming A.
        let payload = DayTokenClaims.payloadJSON(issuedAt: day * 86_400, window: DayWindow(day: day, slackSeconds: 300), issuer: a.issuer)
        let forged = try b.sign(headerJSON: DayTokenClaims.headerJSON, payloadJSON: payload)
        #expect(try endorser.present(forged).body.contains("Signature invalid"))
        // With an audience.
        let withAudience = try a.sign(headerJSON: DayTokenClaims.headerJSON,
                                      payloadJSON: Array(#"{"iat":\#(day * 86_400),"exp":\#((day + 1) * 86_400),"aud":"did:web:endorser.ch","iss":"\#(a.issuer)"}"#.utf8))
        #expect(try endorser.present(withAudience).body.contains("audience"))
        // Without an issuer.
        let noIssuer = try a.sign(headerJSON: DayTokenClaims.headerJSON, payloadJSON: Array(#"{"iat":\#(day * 86_400),"exp":\#((day + 1) * 86_400)}"#.utf8))
        #expect(try endorser.present(noIssuer).body.contains("iss is required"))
        // One altered payload byte.
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array(String(decoding: try Base64URL.decode(parts[1]), as: UTF8.self).replacingOccurrences(of: "\"iat\":", with: "\"iat\":1").utf8))
        #expect(try endorser.present(parts.joined(separator: ".")).status == 400)
    }

    @Test func theStandInsOwnCryptographyPassesTheReferenceVectors() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [EndorserStandIn.script, "selftest"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("selftest ok"))
    }
}
